"""`F` (forward a port of the job's node here) and `!` (a shell on it) for the deck's selected job
and the job view. The forward opens in a thread worker (SSH) and stays open until closed (`F`,
then `x`); its local URL shows in a toast and in the job view's `#forwards` line. The shell is
`gpudeck ssh JOB` with the app suspended (the terminal is the shell's until it exits)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from ..fleet import JobModel, NodeModel
from ..services.background import background
from ..services.forwards import OpenPort, forwards_of
from ..widgets.failures import report, say
from .forward_port import CLOSE, ForwardPortScreen, parse_ports


def lead_node(job: JobModel) -> NodeModel | None:
    """Rank 0's node, as `gpudeck forward` and `gpudeck ssh` default to."""
    return job.nodes.get("0") or next(iter(job.nodes.values()), None)


def ask_forward(screen: Screen[Any], job: JobModel | None) -> None:
    node = lead_node(job) if job is not None else None
    if job is None or node is None:
        return
    forwards = forwards_of(screen.app)
    urls = [p.url for p in forwards.of_job(job.id)]
    title = f"Forward a port of {job.name or job.id} (node {node.node} on {node.host}) here"

    def answered(text: str | None) -> None:
        if text is None:
            return
        if text == CLOSE:
            closed = forwards.close_job(job.id)
            say(screen, f"{closed} forward{'s' * (closed != 1)} of {job.name or job.id} closed", "Forward")
            show_forwards(screen.app, job.id)
            return
        ports = parse_ports(text)
        if ports is not None:
            _open(screen, job, node, *ports)

    screen.app.push_screen(ForwardPortScreen(title, urls), answered)


def _open(screen: Screen[Any], job: JobModel, node: NodeModel, remote: int, local: int) -> None:
    app = screen.app
    forwards = forwards_of(app)

    def opened(port: OpenPort) -> None:
        where = "runs here: nothing to forward" if port.forward is None else f"→ {port.host}:{port.remote}"
        say(app.screen, f"{port.url} {where}", f"Forward: {job.name or job.id}", timeout=15)
        show_forwards(app, job.id)

    def work() -> OpenPort:
        return forwards.open_port(job.id, node.node, node.host, remote, local)

    # owned by the app, not the screen: the toast still comes when the dialog's screen was left
    background(screen).run(
        app, work, group="forward_port", done=opened, failed=lambda exc: report(app.screen, "Forward", exc)
    )


def close_ended(app: Any) -> None:
    """A job that ended takes its forwards with it: each closed, said in a toast, off its view."""
    forwards = getattr(app, "port_forwards", None)
    if forwards is None:
        return  # none was ever opened
    for job_id in forwards.job_ids():
        job = app.fleet.jobs.get(job_id)
        if job is not None and not job.ended:
            continue  # running, or lost (it may still run): kept
        closed = forwards.close_job(job_id)
        name = job.name or job_id if job is not None else job_id
        why = f"it {job.state}" if job is not None else "it is gone"
        say(app.screen, f"{closed} forward{'s' * (closed != 1)} of {name} closed: {why}", "Forward")
        show_forwards(app, job_id)


def show_forwards(app: Any, job_id: str) -> None:
    """The job view's line of open forwards (when a view of that job is open)."""
    forwards = forwards_of(app).of_job(job_id)
    text = "  ".join(f"{p.url} → {p.host}:{p.remote}" for p in forwards)
    for screen in app.screen_stack:
        if getattr(screen, "job_id", None) != job_id:
            continue
        for line in screen.query("#forwards").results(Static):
            line.update(Content(f"Forwarded: {text}" if text else ""))
            line.display = bool(text)


def open_shell(screen: Screen[Any], job: JobModel | None) -> None:
    node = lead_node(job) if job is not None else None
    if job is None or node is None:
        return
    argv = [sys.executable, "-m", "tui", "ssh", job.id, "--node", node.node]
    try:
        with screen.app.suspend():
            code = subprocess.run(argv).returncode
    except Exception as exc:  # noqa: BLE001 - no terminal to give (a test, textual-serve): said
        report(screen, "Shell", exc)
        return
    if code not in (0, 130):
        say(screen, f"gpudeck ssh {job.id} exited with {code}", "Shell", "warning")
