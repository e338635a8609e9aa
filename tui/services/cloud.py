"""CloudInstances: the Cloud tab's feed and actions, owned by the App.

A snapshot of every configured provider/region (`tui.cloud.fleet.snapshot`, blocking: provider
round trips) runs in a one-shot thread worker, first when the tab is opened, then every
`[cloud] refresh` seconds (default 60: each refresh is a round of API calls per instance, and the
providers' GPU metrics have a 1-minute resolution anyway). Instances that are gpudeck hosts are
judged on the TUI's own 1 Hz GPU samples, copied from the Fleet on the app thread before the
worker starts (the worker never reads the live model). Stop / start / launch go through
tui/actions/cloud in workers too; the screen asks the user first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.timer import Timer

from ..errors import GpudeckError
from ..fleet import Fleet
from ..fleet.costs import CostBoard
from ..fleet.host_util import Point, frozen_host_util
from ..settings import Settings
from ..widgets.failures import report, say
from .base import Service

if TYPE_CHECKING:
    from ..cloud.fleet import InstanceView, Snapshot
    from ..cloud.model import Instance, Provider

READ_ONLY = "read-only: cloud {what} refused (gpudeck runs with --read-only or [ui] read_only)"


@dataclass(frozen=True)
class CloudLaunchRequest:
    """What the launch form asks for; the rest (agent dir, timeouts) are the CLI's defaults."""

    provider: str
    instance_type: str
    spot: bool = False
    name: str | None = None
    image: str | None = None
    key: str | None = None
    subnet: str | None = None
    ssh_user: str | None = None  # default: ubuntu on AWS, root on Aliyun
    ssh_port: int = 22
    region: str | None = None


class CloudInstances(Service):
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        settings: Settings,
        changed: Callable[[set[str]], None],
        read_only: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(app)
        self.fleet, self.settings, self.read_only = fleet, settings, read_only
        self.clock, self._changed = clock, changed
        self.snapshot: Snapshot | None = None
        self.failure: str | None = None  # the last refresh failed as a whole (one line)
        self.refreshing = False
        self.busy: set[str] = set()  # instance ids with an action in flight
        self._timer: Timer | None = None
        self.added_host: Callable[[str], None] | None = None  # the app connects to a host a launch added

    @property
    def interval(self) -> float:
        return self.settings.cloud.refresh

    # -- the feed --------------------------------------------------------------------------------

    def start(self) -> None:
        """First look now, then every `interval` seconds (idempotent: the tab may open many times)."""
        if self._timer is None:
            self._timer = self.app.set_interval(self.interval, self.refresh)
            self.refresh()

    def refresh(self) -> None:
        if self.refreshing:  # a slow provider: never two rounds at once
            return
        self.refreshing = True
        now = self.clock()
        util = frozen_host_util(self.fleet.hosts, now)

        def host_util(host: str, start: float, end: float) -> list[Point] | None:
            return [p for p in util.get(host, ()) if start <= p[0] <= end] or None

        def work() -> Snapshot:
            from ..cloud.fleet import snapshot

            return snapshot(self.settings, now=now, host_util=host_util)

        self.in_thread(work, group="cloud-snapshot", exclusive=True, done=self._got, failed=self._failed)
        self._changed({"cloud"})

    def _got(self, snap: Snapshot) -> None:
        self.snapshot, self.failure, self.refreshing = snap, None, False
        self._changed({"cloud"})

    def _failed(self, exc: BaseException) -> None:
        self.failure, self.refreshing = (
            f"cloud refresh failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
            False,
        )
        self._changed({"cloud"})

    # -- actions ---------------------------------------------------------------------------------

    def refused(self, what: str) -> bool:
        if self.read_only:
            say(self.app, READ_ONLY.format(what=what), "read-only", "warning")
        return self.read_only

    def act(self, verb: str, view: InstanceView) -> None:
        """stop or start, on a worker: the core looks the instance up afresh and checks it first."""
        if self.refused(verb):
            return
        instance = view.instance
        if instance.id in self.busy:  # one action per instance at a time
            say(self.app, f"{instance.id}: an action is already under way", f"cloud {verb}", "warning")
            return
        self.busy.add(instance.id)

        def work() -> None:
            from ..actions import cloud as core

            provider = self._provider(instance.provider, instance.region)
            getattr(core, verb)(core.find([provider], instance.id))

        def done(_: object) -> None:
            self.busy.discard(instance.id)
            say(self.app, f"{instance.id}: {'stopping' if verb == 'stop' else 'starting'}", f"cloud {verb}")
            self.refresh()

        def failed(exc: BaseException) -> None:
            self.busy.discard(instance.id)
            report(self.app, f"cloud {verb} {instance.id}", exc)

        self.in_thread(work, group=f"cloud-act:{instance.id}", done=done, failed=failed)

    def budget_reached(self, board: CostBoard) -> None:
        """The fleet's daily budget is reached: stop the running opted-in instances (on a worker; every
        decision journaled in cloud-rules.jsonl). Read-only acts on nothing, as for jobs."""
        if self.read_only or board.daily_budget is None or board.today is None:
            return
        today, budget, currency = board.today, board.daily_budget, board.currency

        def work() -> tuple[list[Any], list[str]]:
            from ..actions import cloud as core
            from ..cloud import providers

            found, problems = providers.configured(self.settings.cloud)
            done, failed = core.enforce_budget(found, today, budget, currency)
            return done, problems + failed

        def done(result: tuple[list[Any], list[str]]) -> None:
            decisions, problems = result
            stopped = [d.instance_id for d, outcome in decisions if outcome == "stopped"]
            failed = [
                f"{d.instance_id}: {outcome}" for d, outcome in decisions if outcome.startswith("stop failed")
            ]
            if stopped:
                say(
                    self.app,
                    f"daily budget reached: stopping cloud instance(s) {', '.join(stopped)}",
                    "fleet budget",
                    "warning",
                    timeout=15,
                )
                if self._timer is not None:  # the tab is open: show them stopping
                    self.refresh()
            for line in failed:
                say(self.app, line, "fleet budget", "error", timeout=15)

        self.in_thread(
            work,
            group="cloud-budget",
            exclusive=True,
            done=done,
            failed=lambda exc: report(self.app, "fleet budget: cloud instances", exc),
        )

    def _provider(self, name: str, region: str, timeout: float = 10.0) -> Provider:
        from ..cloud import providers
        from ..cloud.model import CloudError

        try:
            return providers.make(name, region, self.settings.cloud, timeout=timeout)
        except CloudError as exc:
            raise GpudeckError(str(exc)) from None

    def launch(self, request: CloudLaunchRequest, ask_key: Callable[[str, Any], bool]) -> None:
        """Launch, wait until it runs and SSH answers, add it to hosts.toml, trust its host key only by
        a fingerprint the provider published or the user's yes (ask_key: a modal, from this worker)."""
        if self.refused("launch"):
            return
        say(self.app, f"launching {request.instance_type} on {request.provider}…", "cloud launch")

        def work() -> str:
            from ..actions import cloud_launch

            region = request.region or cloud_launch.first_region(request.provider, self.settings.cloud)
            provider = self._provider(request.provider, region, timeout=30.0)
            wanted = cloud_launch.HostLaunch(
                request.instance_type,
                request.spot,
                request.name,
                request.image,
                request.key,
                request.subnet,
                ssh_user=request.ssh_user,
                ssh_port=request.ssh_port,
            )
            return cloud_launch.launch_host(
                provider,
                wanted,
                self._progress,
                lambda name, instance: self._trust(provider, name, instance, ask_key),
            )

        def done(name: str) -> None:
            say(self.app, f"{name} is a gpudeck host now", "cloud launch", timeout=10)
            if self.added_host is not None:
                self.added_host(name)
            self.refresh()

        self.in_thread(
            work, group="cloud-launch", done=done, failed=lambda exc: report(self.app, "cloud launch", exc)
        )

    def _trust(
        self, provider: Provider, name: str, instance: Instance, ask_key: Callable[[str, Any], bool]
    ) -> None:
        """Connect once (on the launch worker): a key the provider published on the console is trusted,
        any other only on the user's yes in the host-key modal; a no leaves the host untrusted."""
        from ..cloud.console import published_fingerprints
        from ..cloud.model import CloudError
        from ..remote.hostkey_errors import HostKeyError, fingerprint
        from ..remote.transport import TransportError
        from ..session import host_key_error, ssh_transport_for

        try:
            published = published_fingerprints(provider.console_output(instance))
        except CloudError:
            published = set()

        def check(known_name: str, key: Any) -> bool:
            return fingerprint(key) in published or ask_key(known_name, key)

        transport = ssh_transport_for(name, confirm=check, config=self.settings)
        try:
            transport.connect()
        except HostKeyError as exc:
            raise host_key_error(name, exc) from None
        except TransportError as exc:
            raise GpudeckError(f"host {name}: {exc}") from None
        finally:
            transport.close()

    def _progress(self, line: str) -> None:
        """From the launch worker: one notification per step."""
        try:
            self.app.call_from_thread(say, self.app, line, "cloud launch")
        except RuntimeError:  # the app is closing
            pass
