"""The jobs waiting in this machine's queue (`run --queue`) on the jobs tab: the queue is files
under GPUDECK_HOME, read in a thread worker every PERIOD seconds (nothing is read, and no queue
code loaded, where no job was ever queued). A job the controller starts leaves the list while its
own row comes from its host. `s` on a waiting row takes it out of the queue, as `gpudeck stop` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.app import App

from ..fleet import Fleet
from ..queue.listing import waiting_jobs
from ..widgets.failures import say
from .base import Service

PERIOD = 2.0  # seconds between looks: as often as `gpudeck queue` would be typed, at most


class QueueWatch(Service):
    def __init__(self, app: App[Any], fleet: Fleet, publish: Callable[[set[str]], None]) -> None:
        super().__init__(app)
        self.fleet, self.publish = fleet, publish
        self.looks = 0  # looks done (tests wait on it)
        self._said: set[str] = set()  # the queue's problems already told (a bad entry file, once)

    def start(self) -> None:
        self.look()
        self.app.set_interval(PERIOD, self.look)

    def look(self) -> None:
        problems: list[str] = []
        self.in_thread(
            lambda: waiting_jobs(problems.append),
            group="queue-watch",
            exclusive=True,
            done=lambda entries: self._got(entries, problems),
            failed=lambda exc: self._tell(f"queue: {exc}"),
        )

    def _got(self, entries: list[dict[str, Any]], problems: list[str]) -> None:
        self.looks += 1
        for line in problems:
            self._tell(line)
        if self.fleet.set_queued(entries):
            self.publish({"queue"})

    def _tell(self, line: str) -> None:
        if line not in self._said:
            self._said.add(line)
            say(self.app, line, "queue", "warning")

    def cancel(self, job_id: str) -> None:
        """Take a waiting job out of the queue (a worker), then look again."""

        def take() -> str:
            from ..queue.entries import Queue  # here: only a cancel needs the queue's writer

            entry = Queue().cancel(job_id)
            return f"{entry.name} ({entry.id}) left the queue" if entry else f"{job_id} was no longer waiting"

        def done(line: str) -> None:
            say(self.app, line, "queue")
            self.look()

        self.in_thread(take, group="queue-cancel", done=done, failed=lambda exc: self._tell(f"queue: {exc}"))
