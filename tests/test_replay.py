"""--record / --replay: a real agent session recorded (env values hidden), then played back with no
agent: same answers, polls holding the last, events at their recorded pace, actions refused."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import spec
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError
from tui.remote.recording import REDACTED, Recorder
from tui.remote.replay import Recording, ReplayError, ReplayTransport
from tui.remote.transport import LocalTransport

SESSION = Path(__file__).parent / "data" / "recordings" / "session.jsonl"
SECRET = "hunter2-do-not-record"


def _entries(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_real_session_is_recorded_without_env_values_and_replays(
    agent_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "rec.jsonl"
    recorder = Recorder(out)
    client = AgentClient(recorder.wrap(LocalTransport(agent_dir)))
    client.connect()
    hello = client.request("hello")
    job = client.request(
        "launch", spec=spec(workdir, [sys.executable, "-c", "print('ready')"], env={"API_TOKEN": SECRET})
    )
    wait_for(lambda: client.request("jobs")["jobs"][0]["state"] == "exited", what="the job to exit")
    client.tail(job["id"], "0", 0)
    batch = client.events.get(timeout=10)
    logs = client.request("logs", job=job["id"], node="0")
    client.close()
    recorder.close()

    text = out.read_text()
    assert SECRET not in text and f'"API_TOKEN":"{REDACTED}"' in text
    assert out.stat().st_mode & 0o077 == 0  # owner-only: output and host facts are in it
    launch = next(e for e in _entries(out) if e.get("msg", {}).get("op") == "launch")
    assert launch["msg"]["spec"]["argv"][-1] == "print('ready')"  # only env values are hidden

    replay = AgentClient(Recording.load(out).transport("local", speed=0))
    replay.connect()
    assert replay.request("hello")["hostname"] == hello["hostname"]
    assert replay.request("jobs")["jobs"][0]["state"] == "exited"
    assert replay.request("logs", job=job["id"], node="0") == logs
    replay.tail(job["id"], "0", 0)
    assert replay.events.get(timeout=5)[2] == batch[2]
    with pytest.raises(AgentError, match="read-only replay: stop"):
        replay.request("stop", job=job["id"], node="0")
    with pytest.raises(AgentError, match="read-only replay: launch"):
        replay.request("launch", spec={})
    replay.close()


def _tape(*lines: dict) -> Recording:
    header = {"format": "gpudeck-recording", "version": 1}
    return Recording.parse([json.dumps(x) for x in (header, *lines)])


def _io(t: float, conn: int, direction: str, msg: dict) -> dict:
    return {"t": t, "host": "h1", "conn": conn, "dir": direction, "msg": msg}


def test_polls_take_the_next_answer_and_hold_the_last() -> None:
    rec = _tape(
        *(
            x
            for n in (1, 2)
            for x in (
                _io(n, 1, "send", {"id": n, "op": "gpus"}),
                _io(n, 1, "recv", {"id": n, "ok": True, "result": {"n": n}}),
            )
        )
    )
    client = AgentClient(ReplayTransport(rec, "h1", speed=1))  # speed 1: the replay stays near t=0
    client.connect()
    assert [client.request("gpus")["n"] for _ in range(4)] == [1, 2, 2, 2]
    with pytest.raises(AgentError, match="not in this recording"):
        client.request("jobs")
    client.close()


def test_events_come_at_their_recorded_pace_scaled_by_speed() -> None:
    def push(t: float, seq: int) -> dict:
        return _io(
            t,
            1,
            "recv",
            {
                "push": "events",
                "job": "j",
                "node": "0",
                "events": [{"seq": seq, "t": t, "kind": "heartbeat"}],
            },
        )

    rec = _tape(_io(0.0, 1, "send", {"id": 1, "op": "hello"}), push(0.0, 1), push(2.0, 2))
    client = AgentClient(ReplayTransport(rec, "h1", speed=10))  # 2 s recorded -> 0.2 s
    client.connect()
    start = time.monotonic()
    client.tail("j", "0", 0)
    first = client.events.get(timeout=5)
    second = client.events.get(timeout=5)
    assert [r["seq"] for r in first[2] + second[2]] == [1, 2]
    assert time.monotonic() - start >= 0.15
    client.close()


def test_the_recorder_keeps_lines_whole_across_threads(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "r.jsonl")

    def hammer(n: int) -> None:
        for i in range(200):
            recorder.line(f"h{n}", n, "recv", json.dumps({"id": i, "pad": "x" * 500}).encode() + b"\n")

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorder.close()
    entries = _entries(tmp_path / "r.jsonl")[1:]
    assert len(entries) == 1600
    assert [e["t"] for e in entries] == sorted(e["t"] for e in entries)


def test_bad_recordings_fail_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "x.jsonl").write_text('{"not": "a recording"}\n')
    with pytest.raises(ReplayError, match="not a gpudeck recording"):
        Recording.load(tmp_path / "x.jsonl")
    with pytest.raises(ReplayError, match="cannot read"):
        Recording.load(tmp_path / "missing.jsonl")


@pytest.mark.slow
def test_cli_replays_the_shipped_recording_read_only(gpudeck_home: Path) -> None:
    ps = gpudeck("--replay", str(SESSION), "--replay-speed", "0", "ps", "--all")
    assert ps.returncode == 0, ps.stderr
    assert "resnet-demo" in ps.stdout and "CUDA out of memory" in ps.stdout
    stop = gpudeck("--replay", str(SESSION), "--replay-speed", "0", "stop", "resnet-demo")
    assert stop.returncode != 0 and "read-only replay" in stop.stderr
    assert stop.stderr.count("\n") == 1
    bad = gpudeck("--replay", str(SESSION), "--replay-speed", "-1", "ps")
    assert bad.returncode == 2 and "--replay-speed" in bad.stderr


def test_cli_record_writes_the_session(gpudeck_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.jsonl"
    r = gpudeck("--record", str(out), "ps")
    assert r.returncode == 0, r.stderr
    ops = [e["msg"].get("op") for e in _entries(out)[1:] if e.get("dir") == "send"]
    assert "jobs" in ops
    assert Recording.load(out).hosts == ["local"]


def test_hosts_trust_while_recording_checks_the_key_over_ssh(gpudeck_home: Path, tmp_path: Path) -> None:
    # The key check is an SSH login with no agent behind it: it used to get the recorder's wrapper,
    # which has no connect(), and end in "internal error: AttributeError" (found by mypy).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing answers there
    (gpudeck_home / "hosts.toml").write_text(f'[hosts.down]\ntarget = "127.0.0.1:{port}"\n')
    r = gpudeck("--record", str(tmp_path / "trust.jsonl"), "hosts", "trust", "down", "--yes")
    assert r.returncode == 4 and "host down unreachable" in r.stderr, r.stderr
    assert "internal error" not in r.stderr


def test_the_shipped_recording_holds_no_env_value() -> None:
    text = SESSION.read_text()
    assert "recorded-secret-value" not in text and f'"WANDB_API_KEY":"{REDACTED}"' in text


def test_the_app_shows_a_refused_action_as_a_notification(gpudeck_home: Path) -> None:
    import asyncio

    from tui.app import GpuDeckApp

    async def go() -> None:
        rec = Recording.load(SESSION)
        app = GpuDeckApp(hosts=rec.hosts, transport=lambda h: rec.transport(h, speed=0), store=None)
        async with app.run_test(size=(120, 30)) as pilot:
            for _ in range(200):
                if any(j.name == "resnet-demo" for j in app.fleet.jobs.values()):
                    break
                await pilot.pause(0.05)
            job = next(j for j in app.fleet.jobs.values() if j.name == "resnet-demo")
            app.job_control.end(job, "kill")
            for _ in range(200):
                notes = [n.message for n in app._notifications]
                if any("read-only replay: kill" in m for m in notes):
                    return
                await pilot.pause(0.05)
            raise AssertionError(f"no read-only notification: {notes}")

    asyncio.run(go())


def test_series_is_folded_from_the_journal_the_recording_saw() -> None:
    """A replay answers `series` as the agent would, so an ended job opened again (its series
    dropped to a summary) draws its chart in a demo too."""

    def push(t: float, records: list) -> dict:
        return _io(t, 1, "recv", {"push": "events", "job": "j", "node": "0", "events": records})

    points = [
        {"seq": i, "t": float(i), "kind": "metric", "values": {"step": i, "loss": 1.0 / i}}
        for i in range(1, 301)
    ]
    rec = _tape(
        _io(0.0, 1, "send", {"id": 1, "op": "hello"}),
        push(0.0, points[:150]),
        push(0.0, points[150:]),
        push(50.0, [{"seq": 301, "t": 50.0, "kind": "metric", "values": {"step": 301, "loss": 9.0}}]),
    )
    client = AgentClient(ReplayTransport(rec, "h1", speed=1))  # speed 1: the replay stays near t=0
    client.connect()
    answer = client.request("series", job="j", node="0", width=100)
    loss = answer["metrics"]["loss"]
    assert answer["last_seq"] == 300 and loss["axis"] == "step" and len(loss["points"]) <= 100
    assert loss["points"][0] == [1, 1.0] and max(p[0] for p in loss["points"]) >= 295  # not the future point
    client.close()
