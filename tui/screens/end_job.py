"""The one confirm path for stopping or killing a job, shared by the job screens and the process view."""

from __future__ import annotations

import time
from typing import Any

from textual.screen import Screen

from ..fleet import JobModel
from ..services import JobControl
from ..services.jobs import refused_read_only
from .confirm import ConfirmScreen

END_DETAIL = {
    "stop": ("Stop", "Stop signal now, SIGKILL for what is left after the grace period."),
    "kill": ("Kill", "SIGKILL for every process of the job, now: no checkpoint, no cleanup."),
}


def confirm_end(screen: Screen[Any], job_control: JobControl, job: JobModel | None, action: str) -> None:
    """Ask, then stop or kill every node of the job (refused in read-only mode, ignored once it ended)."""
    if refused_read_only(screen.app, action) or job is None:
        return
    if job.ended and action == "stop" and job.held_until(time.time()) is not None:  # --hold-on-fail
        screen.app.push_screen(
            ConfirmScreen(
                f"Let go of {job.name or job.id}?", "Its node is no longer kept for debugging.", "Let go"
            ),
            lambda yes: job_control.release_hold(job) if yes else None,
        )
        return
    if job.ended:
        return
    verb, detail = END_DETAIL[action]
    screen.app.push_screen(
        ConfirmScreen(f"{verb} {job.name or job.id}?", detail, verb),
        lambda yes: job_control.end(job, action) if yes else None,
    )
