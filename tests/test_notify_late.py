"""Issue 35, notifications from the user's side: an apprise target a host cannot POST to (form://,
xml://, mailto://…) hears of a job's end when gpudeck next runs, once however many runs see it,
marked late, and never with its URL in anything gpudeck prints; `host_unreachable` is told once per
outage (a host that answered before), and once more when it answers again; per-host and per-job
(`run --notify`) event filters decide what each job's host is told to send."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from tests.conftest import gpudeck
from tests.support.receiver import PostReceiver
from tests.support.sshd import SshHome
from tests.support.waiting import wait_for


def _form(body: bytes) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(body.decode()).items()}


@pytest.mark.slow  # a job and CLI runs: ~3 s
def test_an_apprise_target_hears_of_a_failure_once_after_two_cli_runs(
    gpudeck_home: Path, workdir: Path
) -> None:
    receiver = PostReceiver()
    secret = "tok3n-s3cret"
    (gpudeck_home / "config.toml").write_text(
        f'[notify]\nurls = ["form://u:{secret}@127.0.0.1:{receiver.port}/late"]\nevents = ["failed"]\n'
    )
    try:
        run = gpudeck("run", "--name", "boom", "--", "bash", "-c", "exit 3", cwd=workdir)
        assert run.returncode == 0, run.stderr
        job = run.stdout.strip()
        wait_for(lambda: "failed" in gpudeck("ps", "--all", cwd=workdir).stdout, what="the job's failure")
        assert receiver.got, "the first run that saw the end sends it"
        second = gpudeck("ps", "--all", cwd=workdir)
        assert second.returncode == 0 and job in second.stdout
        [(path, body)] = receiver.got  # exactly one: the ledger kept the second run from sending again
        message = _form(body)
        assert (
            path == "/late"
            and f"boom failed (failed) on local: exited with code 3 — gpudeck inspect {job}"
            in message["message"]
        )
        assert "sent late" in message["message"] and "after it happened" in message["message"]
        files = [p for p in gpudeck_home.rglob("*") if p.is_file() and p.name != "config.toml"]
        assert not any(secret.encode() in p.read_bytes() for p in files)  # not in the store, nor journals
        assert secret not in run.stderr + second.stderr + second.stdout
    finally:
        receiver.close()


@pytest.mark.slow  # a job and CLI runs: ~3 s
def test_a_target_added_after_a_job_ended_is_not_sent_its_end(gpudeck_home: Path, workdir: Path) -> None:
    receiver = PostReceiver()
    try:
        run = gpudeck("run", "--", "bash", "-c", "exit 3", cwd=workdir)
        wait_for(lambda: "failed" in gpudeck("ps", "--all", cwd=workdir).stdout, what="the job's failure")
        (gpudeck_home / "config.toml").write_text(
            f'[notify]\nurls = ["xml://127.0.0.1:{receiver.port}/x"]\nevents = ["failed"]\n'
        )
        assert gpudeck("ps", "--all", cwd=workdir).returncode == 0 and run.returncode == 0
        assert receiver.got == []
    finally:
        receiver.close()


@pytest.mark.slow  # ~4 CLI runs over SSH
@pytest.mark.timeout(120)
def test_a_host_that_stops_answering_is_told_once_and_its_return_too(
    ssh_home: SshHome, workdir: Path
) -> None:
    receiver = PostReceiver()
    ssh_home.trust()
    ssh_home.add_host("box")
    (ssh_home.gpudeck_home / "config.toml").write_text(
        "[ssh]\nconnect_timeout = 3\n[notify]\n"
        f'urls = ["json://127.0.0.1:{receiver.port}/down"]\n'
        'events = ["host_unreachable"]\nunreachable_fails = 2\nunreachable_after = 0\n'
    )
    config = ssh_home.home / ".ssh" / "config"
    good = config.read_text()
    try:
        assert gpudeck("ps", cwd=workdir).returncode == 0  # box answered: it can now be missed
        config.write_text(good.replace(f"Port {ssh_home.server.port}", "Port 1"))
        assert gpudeck("ps", cwd=workdir).returncode != 0
        assert receiver.got == []  # one failure is not an outage yet
        gpudeck("ps", cwd=workdir)
        gpudeck("ps", cwd=workdir)
        [(_, down)] = receiver.got  # told once, however many runs fail after
        assert (
            json.loads(down)["event"] == "host_unreachable" and "box unreachable" in json.loads(down)["text"]
        )
        config.write_text(good)
        assert gpudeck("ps", cwd=workdir).returncode == 0
        assert gpudeck("ps", cwd=workdir).returncode == 0
        assert [json.loads(b).get("recovered") for _, b in receiver.got] == [None, True]
    finally:
        receiver.close()


@pytest.mark.slow  # a job and CLI runs: ~3 s
def test_per_host_and_per_job_events_reach_the_spec(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    (gpudeck_home / "config.toml").write_text(
        '[notify]\nurls = ["json://127.0.0.1:9/x", "form://127.0.0.1:9/y"]\nevents = ["failed"]\n'
        '[notify.hosts.local]\nevents = ["ended", "stalled"]\n'
    )

    def spec_of(*run_args: str) -> dict:
        run = gpudeck("run", *run_args, "--", "true", cwd=workdir)
        assert run.returncode == 0, run.stderr
        return json.loads((agent_dir / "jobs" / run.stdout.strip() / "0" / "spec.json").read_text())["notify"]

    # the host's own URL only (form:// is the user's side's), the host's events
    assert spec_of() == {"urls": ["json://127.0.0.1:9/x"], "events": ["ended", "stalled"]}
    assert spec_of("--notify", "budget_stop,failed")["events"] == ["budget_stop", "failed"]


def test_bad_event_names_are_one_line_naming_where(gpudeck_home: Path, workdir: Path) -> None:
    (gpudeck_home / "config.toml").write_text(
        '[notify]\nurls = []\n\n[notify.hosts.box]\nevents = ["failed", "oops"]\n'
    )
    r = gpudeck("ps", cwd=workdir)
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "config.toml:5: [notify.hosts.box] events: unknown event 'oops' (known: ended, failed, budget_stop, "
        "idle_stop, preempted, recovered, gave_up, queued_start, host_unreachable, stalled, advice)"
    )
    (gpudeck_home / "config.toml").unlink()
    r = gpudeck("run", "--notify", "failed,nope", "--", "true", cwd=workdir)
    assert r.returncode == 2 and r.stderr.strip() == (
        "gpudeck: --notify 'nope': unknown event (known: ended, failed, budget_stop, idle_stop, preempted, "
        "recovered, gave_up, queued_start, host_unreachable, stalled, advice)"
    )


def test_only_one_of_two_ledgers_may_send_a_message(gpudeck_home: Path) -> None:
    from tui.notify_ledger import Ledger

    first, second = Ledger(), Ledger()  # two processes' worth: each its own connection
    try:
        url = "form://u:secret@127.0.0.1:9/x"
        assert first.claim(url, "failed:job-1") and not second.claim(url, "failed:job-1")
        assert second.claim(url, "failed:job-2") and second.claim("xml://127.0.0.1:9/x", "failed:job-1")
        assert first.since(url, 100.0) == second.since(url, 200.0) == 100.0  # the first sight holds
        [db] = gpudeck_home.rglob("notify.db")
        assert b"secret" not in db.read_bytes()  # targets are kept by a hash of their URL
    finally:
        first.close()
        second.close()


def test_the_controller_tells_an_apprise_target_too() -> None:
    from tui.notify_controller import tell
    from tui.settings import NotifySettings

    receiver = PostReceiver()
    try:
        notify = NotifySettings((f"xml://127.0.0.1:{receiver.port}/c",), ("recovered",))
        record = {"kind": "managed", "outcome": "recovered", "job": {"id": "20261205-100000-aaaaaa", "name": "kept"},
                  "to": "20261205-100001-bbbbbb", "to_host": "box-b", "why": "host box-a lost"}  # fmt: skip
        assert tell(notify, record)["notified"] == {"event": "recovered", "sent": 1, "failed": []}
        [(path, body)] = receiver.got
        assert path == "/c" and b"kept recovered on box-b: host box-a lost" in body  # apprise's XML
    finally:
        receiver.close()


@pytest.mark.slow  # a job, then the real app twice: ~5 s
@pytest.mark.timeout(90)
def test_the_tui_tells_an_end_that_happened_while_it_was_closed_once(
    gpudeck_home: Path, workdir: Path
) -> None:
    import asyncio

    from tests.support.tui import until
    from tui.app import GpuDeckApp

    receiver = PostReceiver()
    (gpudeck_home / "config.toml").write_text(
        f'[notify]\nurls = ["form://127.0.0.1:{receiver.port}/tui"]\nevents = ["failed"]\n'
    )

    async def open_tui() -> None:
        app = GpuDeckApp()
        async with app.run_test(size=(120, 30)) as pilot:
            await until(pilot, lambda: app.late_notify.passes >= 1, "the first pass", timeout=30)

    try:
        job = gpudeck("run", "--name", "away", "--", "bash", "-c", "exit 5", cwd=workdir).stdout.strip()
        wait_for(
            lambda: "failed" in gpudeck("inspect", job, "--json", cwd=workdir).stdout, what="the failure"
        )
        assert receiver.got == []  # inspect does not tell: only a listing does (ps, controller, TUI)
        asyncio.run(open_tui())
        asyncio.run(open_tui())
        [(path, body)] = receiver.got
        assert (
            path == "/tui"
            and f"away failed (failed) on local: exited with code 5 — gpudeck inspect {job}"
            in _form(body)["message"]
        )
    finally:
        receiver.close()
