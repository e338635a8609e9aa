"""Job actions from the app: building a launch spec from the form, and stop/kill/restart.

Specs are built exactly as `gpudeck run` builds them (its helpers are reused), so a job launched
from the app and one launched from the CLI are indistinguishable. The blocking functions here run
in thread workers; their return value is the line the app shows as a notification.
"""

from __future__ import annotations

import argparse
import math
import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from remote_agent.names import new_job_id

from ..commands import run as run_cmd
from ..commands.run import build_spec, default_name
from ..errors import CliError
from ..fleet import JobModel
from ..store import JobRecord, Store
from .link import HostLink, LinkDown

STOP_MARGIN = 60.0  # the agent answers a stop once the tree is gone: grace plus this at most
DEMO_COMMAND = "python -m trainer --steps 300"


class ActionError(Exception):
    """A refused action; the message is the one line the user sees."""


def split_command(command: str) -> list[str]:
    """The form's command line as argv, exactly as it will be launched (no shell involved)."""
    try:
        return shlex.split(command)
    except ValueError as exc:  # an unclosed quote
        raise ActionError(f"command: {exc}") from None


def form_spec(host: str, command: str, name: str = "", workdir: str = "", env: str = "",
              setup: str = "", job_id: str | None = None, budget: str = "", idle_stop: str = "") -> dict[str, Any]:
    """The launch spec for the form's fields; env is `K=V K2="a b"`, setup one line per line.
    budget is an amount in the host's currency (empty: none); idle_stop is `--idle-stop`'s
    `30m@10%+15m` or `off` (empty: the host's default). Both are priced by `gpudeck run`'s rules."""
    argv = split_command(command)
    if not argv:
        raise ActionError("command: enter the command to run, e.g. " + DEMO_COMMAND)
    try:
        env_items = shlex.split(env)
    except ValueError as exc:
        raise ActionError(f"env: {exc}") from None
    args = _run_defaults()
    args.host, args.name, args.workdir = host, name.strip() or None, workdir.strip() or None
    args.env, args.setup = env_items, [line for line in setup.splitlines() if line.strip()]
    args.budget, args.idle_stop = parse_budget(budget), idle_stop.strip() or None
    try:
        return build_spec(args, argv, job_id or new_job_id())
    except CliError as exc:
        raise ActionError(str(exc)) from None


def parse_budget(text: str) -> float | None:
    text = text.strip().lstrip("$").replace(",", "")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ActionError(f"budget: {text!r} is not an amount; e.g. 50 (stop at $50)") from None
    if not math.isfinite(value) or value <= 0:
        raise ActionError(f"budget: {text!r}: must be more than 0")
    return value


def _run_defaults() -> argparse.Namespace:
    """`gpudeck run`'s options at their defaults, from its own parser: options it grows later
    (prices, budgets…) reach build_spec with their defaults instead of breaking the form."""
    parser = argparse.ArgumentParser(add_help=False)
    run_cmd.add_parser(parser.add_subparsers(dest="verb"))
    return parser.parse_args(["run", "--", "true"])


def preview_name(command: str) -> str:
    """The name a job gets when the form's name is left empty (shown as a placeholder)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return ""
    return default_name(argv, "xxxx") if argv else ""


@dataclass(frozen=True)
class JobTarget:
    """What an action needs of a job, copied on the app thread: the model keeps changing there
    while the action's worker runs."""

    id: str
    label: str
    active: bool
    nodes: tuple[tuple[str, str], ...]  # (host, node)

    @classmethod
    def of(cls, job: JobModel) -> JobTarget:
        nodes = tuple((n.host, n.node) for n in job.nodes.values())
        return cls(job.id, job.name or job.id, job.active, nodes)


def _link(links: Mapping[str, HostLink], host: str) -> HostLink:
    link = links.get(host)
    if link is None:
        raise ActionError(f"unknown host {host!r}")
    return link


def launch(links: Mapping[str, HostLink], store: Store | None, host: str, spec: dict[str, Any]) -> str:
    obj = _link(links, host).job_request("launch", timeout=60.0, spec=spec)
    if store is not None:
        store.record_job(JobRecord(id=spec["id"], name=spec["name"], created_at=spec["created_at"],
                                   nodes=[{"host": host, "node": spec["node"]}], argv=spec["argv"]))
    return f"launched {spec['name']} on {host} ({obj.get('state', 'starting')})"


def end(links: Mapping[str, HostLink], job: JobTarget, action: str, reason: str | None = None) -> str:
    """Stop (graceful) or kill every node; answers once the agent says the tree is gone."""
    extra = {"reason": reason} if reason and action == "stop" else {}
    for host, node in job.nodes:
        _link(links, host).job_request(action, timeout=60.0 + STOP_MARGIN, job=job.id, node=node, **extra)
    return f"{job.label}: {'stopped' if action == 'stop' else 'killed'}"


def restart(links: Mapping[str, HostLink], store: Store | None, job: JobTarget, new_id: str | None = None) -> str:
    """A new job from the same spec (restart_of recorded); a live job is stopped first."""
    if job.active:
        end(links, job, "stop")
    new_id = new_id or new_job_id()
    for host, node in job.nodes:
        _link(links, host).job_request("restart", timeout=60.0, job=job.id, node=node, new_id=new_id)
    if store is not None:
        nodes = [{"host": h, "node": n} for h, n in job.nodes]
        store.record_job(JobRecord(id=new_id, name=job.label, created_at=time.time(), nodes=nodes,
                                   argv=[], restart_of=job.id))
    return f"{job.label}: restarted as {new_id}"


__all__ = ["DEMO_COMMAND", "ActionError", "JobTarget", "LinkDown", "end", "form_spec", "launch", "preview_name", "restart"]
