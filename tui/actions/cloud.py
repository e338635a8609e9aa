"""The one core that acts on cloud instances: find, stop, start, terminate, launch (idempotent).

The CLI asks the user first (naming the instance and its price) and the TUI will too; here are the
checks no caller may skip (and `enforce`, the instance rules, which act only on opted-in instances) — a spot instance AWS cannot stop is refused with the reason — and the
launch that never makes two instances: ClientToken, and before any retry a lookup of the token's tag.
Blocking provider IO: call from a thread worker, never from the UI thread.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ..cloud.model import CloudError, Instance, LaunchSpec, Provider
from ..cloud.retry import RetryPolicy, retrying
from ..cloud.rules import IdleStopDecision, decide, decide_budget, journal
from ..errors import EXIT_USAGE, GpudeckError

Sleep = Callable[[float], None]


@dataclass(frozen=True)
class FoundInstance:
    provider: Provider
    instance: Instance


def find(providers: list[Provider], instance_id: str) -> FoundInstance:
    """The instance with this id in any configured provider/region; one line when none has it."""
    problems = []
    for p in providers:
        try:
            instance = p.get(instance_id)
        except CloudError as exc:
            problems.append(str(exc))
            continue
        if instance is not None:
            return FoundInstance(p, instance)
    where = ", ".join(f"{p.name} {p.region}" for p in providers) or "no configured provider"
    extra = f" ({'; '.join(problems)})" if problems else ""
    raise GpudeckError(f"no instance {instance_id} in {where}{extra}", EXIT_USAGE)


def stop_refusal(instance: Instance) -> str | None:
    """Why this instance cannot be stopped, or None. AWS stops only spot instances of persistent requests."""
    if instance.state in ("stopped", "stopping", "terminated"):
        return f"{instance.id} is already {instance.state}"
    if instance.provider == "aws" and instance.lifecycle == "spot" and instance.spot_persistent is not True:
        return (
            f"{instance.id} is a spot instance from a one-time request: AWS cannot stop it, only terminate it "
            f"(`gpudeck cloud terminate {instance.id}`)"
        )
    return None


def stop(found: FoundInstance) -> None:
    why = stop_refusal(found.instance)
    if why:
        raise GpudeckError(why)
    _act(found.provider.stop, found)


def start(found: FoundInstance) -> None:
    if found.instance.state in ("running", "pending"):
        raise GpudeckError(f"{found.instance.id} is already {found.instance.state}")
    _act(found.provider.start, found)


def terminate(found: FoundInstance) -> None:
    _act(found.provider.terminate, found)


def _act(call: Callable[[Instance], None], found: FoundInstance) -> None:
    try:
        call(found.instance)
    except CloudError as exc:
        raise GpudeckError(str(exc)) from None


def new_token() -> str:
    return f"gpudeck-{uuid.uuid4().hex[:24]}"


def launch(
    provider: Provider, spec: LaunchSpec, policy: RetryPolicy | None = None, sleep: Sleep = time.sleep
) -> str:
    """One instance for this spec's token, whatever happens to the answers: its id.

    A call that times out or is throttled may still have made the instance (the answer was lost), so
    before every retry the token's tag is looked up, and the ClientToken makes the provider itself
    refuse a double where it honours one.
    """
    already = provider.find_launched(spec.token)
    if already is not None:
        return already.id

    def lookup() -> str | None:
        found = provider.find_launched(spec.token)
        return found.id if found is not None else None

    try:
        return retrying(lambda: provider.launch(spec), policy or RetryPolicy(), sleep, before_retry=lookup)
    except CloudError as exc:
        raise GpudeckError(f"launch: {exc}") from None


def wait_running(
    provider: Provider,
    instance_id: str,
    timeout: float = 600.0,
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Instance:
    """Until the instance runs and has an address; GpudeckError if it ends instead or time runs out."""
    deadline = clock() + timeout
    delay = 0.2
    last = "not yet listed"
    while True:
        try:
            instance = provider.get(instance_id)
        except CloudError as exc:
            instance, last = None, str(exc)
        if instance is not None:
            if instance.state == "running" and instance.address:
                return instance
            if instance.state in ("terminated", "stopped", "stopping"):
                raise GpudeckError(
                    f"{instance_id} is {instance.state} instead of running (capacity or quota?)"
                )
            last = instance.state
        if clock() > deadline:
            raise GpudeckError(
                f"{instance_id} still not running with an address after {timeout:.0f} s ({last})"
            )
        sleep(delay)
        delay = min(5.0, delay * 2)


def wait_ssh(
    address: str,
    port: int,
    timeout: float = 300.0,
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Until an SSH server answers there (its `SSH-` banner): a booting instance refuses or stays silent."""
    deadline = clock() + timeout
    delay = 0.2
    last = ""
    while True:
        try:
            with socket.create_connection((address, port), timeout=5) as s:
                s.settimeout(5)
                if s.recv(4).startswith(b"SSH-"):
                    return
                last = "no SSH banner"
        except OSError as exc:
            last = exc.strerror or str(exc)
        if clock() > deadline:
            raise GpudeckError(f"SSH on {address}:{port} did not answer within {timeout:.0f} s ({last})")
        sleep(delay)
        delay = min(5.0, delay * 2)


def enforce(
    providers: list[Provider],
    hosts: dict[str, dict[str, object]],
    now: float | None = None,
    dry_run: bool = False,
    held_on: Callable[[str], str | None] | None = None,
) -> list[tuple[IdleStopDecision, str]]:
    """Apply every cloud host's `instance_idle_stop`; each decision journaled with its inputs and outcome.
    `held_on(host)`: why a failed job holds the host for debugging (--hold-on-fail), or None."""
    from ..cloud.fleet import view
    from ..cost.idle import CostRuleError, parse_idle_stop

    now = time.time() if now is None else now
    done: list[tuple[IdleStopDecision, str]] = []
    for name, fields in sorted(hosts.items()):
        text, instance_id = fields.get("instance_idle_stop"), fields.get("instance_id")
        if not text or not instance_id:
            continue
        try:
            rule = parse_idle_stop(str(text))
        except CostRuleError as exc:
            raise GpudeckError(f"host {name}: instance_idle_stop: {exc}", EXIT_USAGE) from None
        if rule is None:  # "off"
            continue
        try:
            found = find(providers, str(instance_id))
        except GpudeckError as exc:
            decision = IdleStopDecision(now, name, str(instance_id), "keep", str(exc), {"rule": rule})
            journal(decision, "not found")
            done.append((decision, "not found"))
            continue
        decision = decide(
            view(found.provider, found.instance, now, rule["minutes"] * 60, rule["below_pct"], host=name),
            name,
            rule,
            now,
            held=held_on(name) if held_on is not None else None,
        )
        outcome = decision.action
        if decision.action == "stop":
            if dry_run:
                outcome = "would stop (dry run)"
            else:
                try:
                    stop(found)
                    outcome = "stopped"
                except GpudeckError as exc:
                    outcome = f"stop failed: {exc}"
        journal(decision, outcome)
        done.append((decision, outcome))
    return done


def enforce_budget(
    providers: list[Provider],
    today: float,
    budget: float,
    currency: str,
    now: float | None = None,
    dry_run: bool = False,
) -> tuple[list[tuple[IdleStopDecision, str]], list[str]]:
    """The fleet's daily budget reached: stop every running opted-in instance (the others are journaled
    as refused); each decision journaled with its inputs. Returns the decisions and one line per
    provider/region that could not be listed."""
    from ..cloud.fleet import cloud_hosts
    from ..cloud.pricing import price_for

    now = time.time() if now is None else now
    hosts = cloud_hosts()
    done: list[tuple[IdleStopDecision, str]] = []
    problems: list[str] = []
    for p in providers:
        try:
            running = [i for i in p.list() if i.state == "running"]
        except CloudError as exc:
            problems.append(str(exc))
            continue
        for instance in running:
            price = price_for(p, instance, now)
            decision = decide_budget(
                instance,
                hosts.get(instance.id),
                (price.per_hour, price.currency),
                today,
                budget,
                currency,
                now,
            )
            outcome = decision.action
            if decision.action == "stop":
                if dry_run:
                    outcome = "would stop (dry run)"
                else:
                    try:
                        stop(FoundInstance(p, instance))
                        outcome = "stopped"
                    except GpudeckError as exc:
                        outcome = f"stop failed: {exc}"
            journal(decision, outcome)
            done.append((decision, outcome))
    return done, problems
