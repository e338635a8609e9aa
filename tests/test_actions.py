"""tui/actions against the real local agent: what the CLI and the TUI both run. A restart keeps the
spec's argv in the store, a stop waits the job's own grace, settings reach every reconnect policy."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest

from tests.support.waiting import wait_for
from tui.actions import control, find, launch
from tui.actions.control import JobTarget
from tui.actions.options import LaunchOptions
from tui.app import GpuDeckApp
from tui.errors import GpudeckError
from tui.session import Session
from tui.settings import Settings, SshSettings


@pytest.fixture
def session(gpudeck_home: Path):
    s = Session()
    yield s
    s.close()


def state(session: Session, job_id: str) -> str:
    return find.resolve(session, job_id).state


def test_restart_records_the_specs_argv(session: Session, workdir: Path) -> None:
    argv = (sys.executable, "-c", "print('step=1 loss=0.5')")
    launched = launch.launch(
        session, session.store, LaunchOptions(argv=argv, workdir=str(workdir), name="quick")
    )
    wait_for(lambda: state(session, launched.id) == "exited", timeout=30, what="the job to exit")
    job = JobTarget.of_job(find.resolve(session, launched.id))
    new_id = control.restart(session, session.store, job)
    record = session.store.get_job(new_id)
    assert record is not None and record.argv == list(argv) and record.restart_of == launched.id
    assert record.name == "quick" and find.resolve(session, "quick").id == new_id  # the newest, by name


@pytest.mark.slow
def test_stop_uses_the_jobs_grace_and_rm_needs_an_ended_job(session: Session, workdir: Path) -> None:
    # Ignores SIGTERM for a moment, then exits: a stop with grace 20 s must wait for it, not give up.
    code = "import signal, time; signal.signal(signal.SIGTERM, lambda *a: (time.sleep(1.5), exit(0))); time.sleep(600)"
    launched = launch.launch(
        session,
        session.store,
        LaunchOptions(argv=(sys.executable, "-c", code), workdir=str(workdir), grace=20.0),
    )
    wait_for(lambda: state(session, launched.id) == "running", timeout=30, what="running")
    job = JobTarget.of_job(find.resolve(session, launched.id))
    assert job.nodes[0].grace == 20.0 and control.stop_wait(job) == 80.0
    with pytest.raises(GpudeckError, match="stop or kill it first"):
        control.remove(session, session.store, job)
    answers = control.end(session, job, "stop")
    assert control.final_state(answers) in ("stopped", "exited")
    control.remove(session, session.store, JobTarget.of_job(find.resolve(session, launched.id)))
    assert session.store.get_job(launched.id) is None
    with pytest.raises(GpudeckError, match="no job"):
        find.resolve(session, launched.id)


def test_launch_refuses_bad_options_before_any_io(session: Session) -> None:
    with pytest.raises(GpudeckError, match="--grace"):
        launch.launch(session, session.store, LaunchOptions(argv=("true",), grace=-1))
    with pytest.raises(GpudeckError, match="--idle-stop"):
        launch.launch(session, session.store, LaunchOptions(argv=("true",), idle_stop="soon"))
    with pytest.raises(GpudeckError, match="--name"):
        launch.launch(session, session.store, LaunchOptions(argv=("true",), name="-x"))


def test_ssh_backoff_settings_reach_the_cli_and_the_tui(gpudeck_home: Path) -> None:
    (gpudeck_home / "config.toml").write_text("[ssh]\nbackoff_initial = 7\nbackoff_max = 40\n")
    session = Session()
    try:
        client = session.client("local")
        assert (client.backoff_initial, client.backoff_max) == (7.0, 40.0)
    finally:
        session.close()
    app = GpuDeckApp(
        hosts=["local"], store=None, settings=Settings(ssh=SshSettings(backoff_initial=7.0, backoff_max=40.0))
    )
    backoff = app.connections.backoff("local", "connect")
    assert [backoff.failed() for _ in range(4)] == [7.0, 14.0, 28.0, 40.0]


def test_the_hosts_setup_runs_before_the_jobs(gpudeck_home: Path) -> None:
    (gpudeck_home / "hosts.toml").write_text(
        '[hosts.gpu1]\ntarget = "me@gpu1"\nsetup = ["source ~/venv/bin/activate"]\n'
    )
    opts = LaunchOptions(argv=("python", "train.py"), host="gpu1", setup=("export A=1",))
    spec = launch.build_spec(None, opts, "20261201-000000-abcdef")
    assert spec.setup == ("source ~/venv/bin/activate", "export A=1") and spec.workdir == "~"


@pytest.mark.slow
def test_stop_carries_its_reason_and_grace_and_restart_stops_a_live_job_first(
    session: Session, workdir: Path
) -> None:
    # Ignores SIGTERM: only the stop's own grace (0.5 s, not the spec's 60 s) ends it, by SIGKILL.
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(600)"
    first = launch.launch(
        session, session.store, LaunchOptions(argv=(sys.executable, "-c", code), workdir=str(workdir))
    )
    wait_for(lambda: state(session, first.id) == "running", timeout=30, what="running")
    # "up" is printed once SIGTERM is ignored (a stop before that would end it by SIGTERM).
    wait_for(
        lambda: b"up" in base64.b64decode(session.request("local", "logs", job=first.id, node="0")["data"]),
        timeout=30,
        what="the job ignoring SIGTERM",
    )
    job = JobTarget.of_job(find.resolve(session, first.id))
    control.end(session, job, "stop", grace=0.5, reason="fleet daily budget reached")
    ended = find.resolve(session, first.id)
    assert ended.state == "stopped" and ended.why == "fleet daily budget reached"
    assert ended.ending_node.get("signal") == "SIGKILL"  # the grace given, not the spec's, applied
    # restart of a live job: the old one is stopped before the new one starts.
    second = launch.launch(
        session, session.store, LaunchOptions(argv=("sleep", "600"), workdir=str(workdir), grace=1)
    )
    wait_for(lambda: state(session, second.id) == "running", timeout=30, what="running")
    new_id = control.restart(session, session.store, JobTarget.of_job(find.resolve(session, second.id)))
    assert state(session, second.id) == "stopped"
    listed = [j.id for j in find.list_jobs(session)]
    assert listed.index(new_id) < listed.index(second.id) < listed.index(first.id)  # newest first
    control.end(session, JobTarget.of_job(find.resolve(session, new_id)), "kill")
