"""Endings: one "job ended" notice per job, ever. What was shown is remembered in state.db, so a
restart of the TUI repeats none; a job that ended while the TUI was closed (after the previous TUI
started) is told once at the next start. Store IO runs in workers; the sets live on the app thread."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.app import App

from ..fleet import Fleet, JobModel
from .base import Service
from .jobs import JobControl

MAX_CATCH_UP = 5  # endings told one by one at start; the rest in one line


class Endings(Service):
    def __init__(
        self,
        app: App[Any],
        fleet: Fleet,
        job_control: JobControl,
        tell: Callable[[JobModel], None],
        summary: Callable[[str], None],
    ) -> None:
        super().__init__(app)
        self.fleet, self.job_control, self.tell, self.summary = fleet, job_control, tell, summary
        self.shown: set[str] | None = None  # None until state.db has answered
        self.since: float | None = None  # the previous TUI's start: endings after it are news
        self._considered: set[str] = set()  # ended jobs already looked at by scan()
        self._pending: list[JobModel] = []  # endings that came before state.db answered
        self._catch_up_done = False

    def start(self) -> None:
        if not self.job_control.keeps_state:
            self._loaded((set(), None))  # no state.db (tests, replays): remembered in memory only
            return
        self.in_thread(
            self._load, group="endings", done=self._loaded, failed=lambda _: self._loaded((set(), None))
        )

    def _load(self) -> tuple[set[str], float | None]:
        store = self.job_control.store
        if store is None:
            return set(), None
        return store.shown_endings(), store.swap_ui_start(time.time())

    def _loaded(self, got: tuple[set[str], float | None]) -> None:
        self.shown, self.since = got
        pending, self._pending = self._pending, []
        for job in pending:
            self.ended(job)
        self.scan()

    def ended(self, job: JobModel) -> None:
        """A job this TUI saw running has ended (app thread)."""
        if self.shown is None:
            self._pending.append(job)
            return
        self._considered.add(job.id)
        if job.id not in self.shown:
            self._show([job])

    def scan(self) -> None:
        """Endings that happened while no TUI watched, told once (call when jobs or states changed)."""
        if self.shown is None:
            return
        fresh = []
        for job in self.fleet.jobs.values():
            if job.id in self._considered or not job.ended:
                continue
            self._considered.add(job.id)
            if (
                self.since is not None
                and job.id not in self.shown  # the first TUI ever: history is not news
                and job.ended_at is not None
                and job.ended_at >= self.since
            ):
                fresh.append(job)
        if not fresh:
            return
        fresh.sort(key=lambda j: j.ended_at or 0.0)
        told, rest = fresh[:MAX_CATCH_UP], fresh[MAX_CATCH_UP:]
        if rest:
            self.summary(f"{len(rest)} more jobs ended while gpudeck was closed (the jobs tab lists them)")
        self._show(told, quiet=rest)

    def _show(self, jobs: list[JobModel], quiet: list[JobModel] | None = None) -> None:
        assert self.shown is not None
        for job in jobs:
            self.tell(job)
        ids = [j.id for j in jobs + (quiet or [])]
        self.shown.update(ids)
        if self.job_control.keeps_state:
            self.in_thread(lambda: self._remember(ids), group="endings")

    def _remember(self, ids: list[str]) -> None:
        store = self.job_control.store
        if store is not None:
            store.mark_endings_shown(ids, time.time())
