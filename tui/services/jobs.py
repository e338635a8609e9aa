"""JobControl: the TUI's job keys and launch form, run through tui/actions in thread workers.

Each action's outcome is one notification (what happened, or why not, in one line); the store
(state.db) is opened on first use, in a worker, since opening it is IO.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from textual.app import App

from remote_agent.names import new_job_id

from ..actions import control, find, launch, reindex, scale
from ..actions.control import JobTarget
from ..actions.options import LaunchOptions
from ..fleet import JobModel
from ..store import Store
from ..sync.progress import ProgressNotes
from ..widgets.failures import report, say
from .base import Service
from .connections import Connections

READ_ONLY = "read-only: {what} refused (gpudeck --read-only, or [ui] read_only in config.toml)"


def refused_read_only(app: App[Any], what: str) -> bool:
    """True, after one line saying so, when the app is read-only: screens ask before any dialog opens."""
    control = getattr(app, "job_control", None)
    if isinstance(control, JobControl) and control.read_only:
        say(app, READ_ONLY.format(what=what), "read-only", "warning")
        return True
    return False


# Opens state.db (IO: called in a worker); the argument is where its one-line warnings go.
StoreFactory = Callable[[Callable[[str], None]], "Store"]


class JobControl(Service):
    def __init__(
        self, app: App[Any], agents: Connections, store: StoreFactory | None, read_only: bool = False
    ) -> None:
        super().__init__(app)
        self.agents = agents
        self.read_only = read_only  # every action refused: a monitoring screen
        self._store_factory = store
        self._store: Store | None = None
        self._store_lock = threading.Lock()  # two action workers may open it at once

    @property
    def store(self) -> Store | None:
        with self._store_lock:
            if self._store is None and self._store_factory is not None:
                self._store = self._store_factory(self.agents.notice)  # its warnings as notifications
                if self._store.fresh:  # missing or corrupt: its job index comes back from the hosts
                    self._store.fresh = False
                    added = reindex.rebuild_index(self.agents, self._store)  # in the action's worker thread
                    if added:
                        self.agents.notice(
                            f"{self._store.path}: job index rebuilt from the hosts' journals ({added} jobs)"
                        )
            return self._store

    @property
    def keeps_state(self) -> bool:
        """Whether there is a state.db to remember things in (not in tests and replays without one)."""
        return self._store_factory is not None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def _run(self, title: str, fn: Callable[[], str]) -> None:
        if self.read_only:  # the last guard, whatever called: nothing reaches tui/actions
            say(self.app, READ_ONLY.format(what=title), "read-only", "warning")
            return
        self.in_thread(
            fn,
            group="action",
            done=lambda line: say(self.app, str(line), title),
            failed=lambda exc: report(self.app, f"{title} failed", exc),
        )

    def launch(self, opts: LaunchOptions, job_id: str) -> None:
        self._run(
            "launch",
            lambda: str(launch.launch(self.agents, self.store, opts, job_id, progress_for=self._sync_notes)),
        )

    def _sync_notes(self, host: str, files: int, size: int) -> ProgressNotes:
        """A sync that takes over a second says how far it got, every two seconds (from its worker)."""
        return ProgressNotes(f"sync {host}", files, size, self._tell_progress)

    def _tell_progress(self, line: str) -> None:
        with contextlib.suppress(RuntimeError):  # the app is closing: nobody to tell
            self.app.call_from_thread(say, self.app, line, "sync", "information", 3)

    def end(self, job: JobModel, action: str, reason: str | None = None) -> None:
        """Stop (graceful) or kill; waits the job's own grace plus the margin, like the CLI."""
        target = JobTarget.of_model(job)

        def run() -> str:
            answers = control.end(self.agents, target, action, reason=reason)
            return f"{target.label}: {control.final_state(answers)}"

        self._run(action, run)

    def release_hold(self, job: JobModel) -> None:
        """End a failed job's --hold-on-fail on every node that holds it (the agents' `release`)."""

        def run() -> str:
            now = time.time()
            for n in job.nodes.values():
                if n.held_until is not None and n.held_until > now:
                    self.agents.request(n.host, "release", job=job.id, node=n.node)
            return f"{job.name or job.id}: no longer held for debugging"

        self._run("release", run)

    def scale(self, job: JobModel, count: str, onto: tuple[str, ...] = (), new_id: str | None = None) -> str:
        """Resize in restart mode (checkpoint, stop every node, relaunch on the new count) as the CLI's
        `gpudeck scale` does (`onto`: its --host); returns the new job's id, chosen here (unless
        given) so the caller can select it."""
        new_id = new_id or new_job_id()
        self._run(
            "scale",
            lambda: str(
                scale.scale(
                    self.agents, self.store, find.resolve(self.agents, job.id), count, new_id, onto=onto
                )
            ),
        )
        return new_id

    def move(self, job: JobModel, hosts: dict[str, str], new_id: str | None = None) -> str:
        """Relaunch the job's nodes on other hosts (old → new), restart mode from its checkpoint, as
        `policy run` applies a bigger instance type; returns the new job's id."""
        new_id = new_id or new_job_id()
        self._run(
            "move",
            lambda: str(
                scale.scale(
                    self.agents,
                    self.store,
                    find.resolve(self.agents, job.id),
                    str(len(job.nodes)),
                    new_id,
                    move=hosts,
                )
            ),
        )
        return new_id

    def restart(self, job: JobModel) -> str:
        """Returns the new job's id (chosen here, so the caller can select it when it appears)."""
        target, new_id = JobTarget.of_model(job), new_job_id()
        self._run(
            "restart",
            lambda: (
                f"{target.label}: restarted as {control.restart(self.agents, self.store, target, new_id)}"
            ),
        )
        return new_id
