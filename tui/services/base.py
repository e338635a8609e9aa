"""What every app-owned service shares: blocking work in Textual thread workers, and each worker's
outcome handed to a typed callback on the app thread (no dispatch on worker names)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App
from textual.worker import Worker, WorkerState

Done = Callable[[Any], object]  # what a callback returns is ignored
Failed = Callable[[BaseException], object]


class Service:
    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self._outcomes: dict[Worker[Any], tuple[Done | None, Failed | None]] = {}

    def in_thread(
        self,
        fn: Callable[[], Any],
        *,
        group: str,
        exclusive: bool = False,
        done: Done | None = None,
        failed: Failed | None = None,
    ) -> Worker[Any]:
        """Run fn on a worker thread; done(result) or failed(error) then runs on the app thread."""
        worker = self.app.run_worker(fn, group=group, thread=True, exclusive=exclusive, exit_on_error=False)
        self._outcomes[worker] = (done, failed)
        return worker

    def worker_changed(self, worker: Worker[Any], state: WorkerState) -> bool:
        """Called by the app for every worker state change; True when the worker was this service's."""
        if state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return worker in self._outcomes
        outcome = self._outcomes.pop(worker, None)
        if outcome is None:
            return False
        done, failed = outcome
        if state == WorkerState.SUCCESS and done is not None:
            done(worker.result)
        elif state == WorkerState.ERROR and failed is not None:
            failed(worker.error or RuntimeError("unknown error"))
        return True
