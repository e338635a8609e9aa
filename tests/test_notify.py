"""Issue 35, notifications: a job's end is told to config.toml's [notify] targets from its host, so
it arrives with no gpudeck process on the user's machine: a JSON receiver on 127.0.0.1 gets exactly
one message when a budgeted job is stopped, and the journal says what was sent without the URL."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from remote_agent.notify.events import event_of
from remote_agent.notify.send import kind_of, request_for
from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.receiver import PostReceiver
from tests.support.sshd import free_port
from tests.support.waiting import wait_for


def messages(receiver: PostReceiver) -> list[tuple[str, dict]]:
    """The receiver's POSTs, each body read as the JSON a json:// target sends."""
    return [(path, json.loads(body)) for path, body in receiver.got]


def test_each_end_is_its_event() -> None:
    assert (
        event_of({"state": "stopped", "reason": "budget: accrued 2 USD reached the budget of 2"})
        == "budget_stop"
    )
    assert event_of({"state": "stopped", "reason": "idle: GPUs under 5 % for 30 min"}) == "idle_stop"
    assert event_of({"state": "stopped", "reason": "preempted"}) == "preempted"
    assert event_of({"state": "failed", "exit_code": 3}) == "failed"
    assert (
        event_of({"state": "exited", "exit_code": 0})
        == event_of({"state": "stopped", "reason": "user"})
        == "ended"
    )


def test_targets_by_their_url() -> None:
    assert (
        kind_of("json://127.0.0.1:9/x") == "json"
        and kind_of("https://hooks.slack.com/services/T/B/C") == "slack"
    )
    assert kind_of("https://discord.com/api/webhooks/1/t") == "discord" and kind_of("mailto://a@b") is None
    url, body, _ = request_for("https://hooks.slack.com/services/T/B/C", {"text": "done"})
    assert url.startswith("https://hooks.slack.com/") and json.loads(body) == {"text": "done"}
    url, body, kind = request_for("ntfys://ntfy.sh/mytopic", {"text": "done"})
    assert (url, body, kind) == ("https://ntfy.sh/mytopic", b"done", "text/plain; charset=utf-8")


def test_a_url_gpudeck_cannot_send_to_is_one_line_without_the_url(gpudeck_home: Path, workdir: Path) -> None:
    (gpudeck_home / "config.toml").write_text('[notify]\nurls = ["bogus://me:s3cret@mail.example"]\n')
    r = gpudeck("ps", cwd=workdir)
    assert r.returncode == 2 and "[notify] urls: a bogus: URL is not supported" in r.stderr
    assert "s3cret" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # the job runs to its budget: ~3 s
@pytest.mark.timeout(90)
def test_a_budget_stop_reaches_a_json_receiver_with_no_gpudeck_running(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    receiver = PostReceiver()
    dead = free_port()
    (gpudeck_home / "config.toml").write_text(
        "[notify]\n"
        f'urls = ["json://127.0.0.1:{receiver.port}/hook", "ntfy://127.0.0.1:{dead}/topic"]\n'
        'events = ["budget_stop", "failed"]\n'
    )
    try:
        run = gpudeck(
            "run", "--name", "told", "--price-per-hour", "3600", "--budget", "3", "--grace", "1",
            "--", sys.executable, "-c", "import time; time.sleep(300)",
            cwd=workdir,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        job = run.stdout.strip()  # the CLI has exited: only the job's supervisor is left
        wait_for(lambda: receiver.got, timeout=60, interval=0.2, what="the message")
        [(path, message)] = messages(receiver)
        assert path == "/hook" and message["event"] == "budget_stop" and message["job"] == job
        assert message["name"] == "told" and f"gpudeck inspect {job}" in message["text"]
        [said] = wait_for(
            lambda: [r for r in journal(agent_dir, job) if r.get("event") == "notified"], what="notified"
        )
        assert said["data"]["sent"] == 1 and len(said["data"]["failed"]) == 1  # the dead ntfy target
        raw = (agent_dir / "jobs" / job / "0" / "events.jsonl").read_text()
        assert f"127.0.0.1:{receiver.port}" not in raw and f"127.0.0.1:{dead}" not in raw  # no URL in it
    finally:
        receiver.close()


def test_the_controller_tells_a_recovery_and_not_what_was_not_asked() -> None:
    from tui.notify_controller import tell
    from tui.settings import NotifySettings

    receiver = PostReceiver()
    try:
        notify = NotifySettings((f"json://127.0.0.1:{receiver.port}/c",), ("recovered",))
        record = {"kind": "managed", "outcome": "recovered", "job": {"id": "20261205-100000-aaaaaa", "name": "kept"},
                  "to": "20261205-100001-bbbbbb", "to_host": "box-b", "why": "host box-a lost"}  # fmt: skip
        said = tell(notify, record)
        assert said["notified"] == {"event": "recovered", "sent": 1, "failed": []}
        [(_, message)] = messages(receiver)
        assert message["event"] == "recovered" and message["job"] == "20261205-100001-bbbbbb"
        assert "kept recovered on box-b: host box-a lost" in message["text"]
        assert tell(notify, dict(record, kind="queue", outcome="started")) == dict(
            record, kind="queue", outcome="started"
        )
        assert len(receiver.got) == 1  # queued_start was not asked for
    finally:
        receiver.close()
