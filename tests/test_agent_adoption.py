"""A lost job is adopted, not abandoned (#11, finding 2): its supervisor SIGKILLed, a new one takes
the free lock, follows output from where the journal stopped, enforces the budget counted from the
journal's own timestamps, and journals the end -- "exit code unknown", never `lost` forever."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from remote_agent.jobstate import supervisor_alive
from tests.support.jobs import alive, journal, launch, pids_with, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

# One unique metric line every 20 ms, until the go-file (argv[2]) exists; argv[1] is the marker.
PRINTER = (
    "import os, sys, time\ni = 0\nwhile not (len(sys.argv) > 2 and os.path.exists(sys.argv[2])):\n"
    "    print('step=%d loss=%.6f' % (i, 1.0 / (i + 1)), flush=True)\n    i += 1\n    time.sleep(0.02)\n"
    "print('bye', flush=True)\n"
)
# The same, after starting a daemon in its own session that keeps the job's environment (marker).
WITH_DAEMON = (
    "import subprocess, sys\n"
    "subprocess.Popen(['setsid', sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[1] + '-daemon'])\n"
    + PRINTER
)


def out_size(agent_dir: Path, job_id: str) -> int:
    return (agent_dir / "jobs" / job_id / "0" / "output.log").stat().st_size


def kill_supervisor(agent_dir: Path, job_id: str) -> int:
    """SIGKILL the job's supervisor once heartbeats say where parsing got to; returns its pid."""
    wait_for(
        lambda: [r for r in journal(agent_dir, job_id) if r.get("output_offset")],
        what="a heartbeat with an offset",
    )
    supervisor = next(r["supervisor_pid"] for r in journal(agent_dir, job_id) if r.get("state") == "starting")
    os.kill(supervisor, signal.SIGKILL)
    lock_free(agent_dir, job_id)
    return supervisor


def lock_free(agent_dir: Path, job_id: str) -> None:
    """Gone means its lock is free: a killed process shows as a zombie before its last thread let go."""
    wait_for(
        lambda: not supervisor_alive(agent_dir / "jobs" / job_id / "0" / "lock"),
        timeout=60,  # a killed process's last thread lets go late on a loaded machine
        what="the supervisor's lock to be free",
    )


def adopted(agent_dir: Path, job_id: str) -> list[dict]:
    return [r for r in journal(agent_dir, job_id) if r.get("event") == "adopted"]


def steps(agent_dir: Path, job_id: str) -> list[int]:
    return [r["values"]["step"] for r in journal(agent_dir, job_id) if r["kind"] == "metric"]


@pytest.mark.slow
def test_a_lost_job_is_adopted_its_metrics_go_on_and_its_budget_holds(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"adopt-budget-{uuid.uuid4().hex}"
    # 1 $/s: the budget holds only if the time before the loss counts too; 20 s leaves a loaded
    # machine room to kill the supervisor and see output go on before the budget is due.
    job = launch(
        client,
        workdir,
        [sys.executable, "-c", PRINTER, marker],
        heartbeat_interval=0.2,
        grace=5,
        price={"per_hour": 3600.0},
        budget=20.0,
    )
    running_at = next(r["t"] for r in journal(agent_dir, job["id"]) if r.get("state") == "running")
    wait_for(lambda: journal(agent_dir, job["id"])[-1]["t"] - running_at >= 3, what="3 s of running")
    supervisor = kill_supervisor(agent_dir, job["id"])
    size = out_size(agent_dir, job["id"])
    wait_for(
        lambda: out_size(agent_dir, job["id"]) > size + 200,
        timeout=30,
        what="output printed with no supervisor",
    )
    client.request("jobs")  # whoever finds it lost hands it to a new supervisor
    record = wait_for(lambda: adopted(agent_dir, job["id"]), what="the adopted record")[0]
    assert record["data"]["previous_supervisor_pid"] == supervisor
    why = record["data"]["why"]  # the listing, or the host's keeper before it (issue 29)
    assert "supervisor was gone" in why and ("job listing" in why or "the host's keeper" in why), why
    final = wait_state(client, job["id"], {"stopped", "exited", "failed", "killed"}, timeout=60)
    assert final["state"] == "stopped" and final["reason"].startswith("budget"), final
    rule = next(r for r in journal(agent_dir, job["id"]) if r.get("event") == "autostop")
    # Accrued from the journal's `running` record, not from the adoption.
    assert abs(rule["data"]["accrued"] - (rule["t"] - running_at)) < 1.0, (rule, running_at)
    assert rule["t"] > record["t"]
    # Every line printed, before, during and after the loss, is one metric point: no gap, no double.
    seen = steps(agent_dir, job["id"])
    assert seen == list(range(len(seen))) and seen[-1] > 0
    assert pids_with(marker) == []


@pytest.mark.slow
def test_an_adopted_job_that_exits_is_exited_code_unknown_and_logs_f_follows_it(
    gpudeck_home: Path, workdir: Path
) -> None:
    agent_dir = gpudeck_home / "local-agent"
    marker = f"adopt-exit-{uuid.uuid4().hex}"
    go = workdir / "go"
    run = subprocess.run(
        [sys.executable, "-m", "tui", "run", "--", sys.executable, "-c", PRINTER, marker, str(go)],
        capture_output=True,
        text=True,
        cwd=workdir,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    wait_for(lambda: pids_with(marker), what="the job")
    # Default heartbeats are 10 s apart: the adopter re-reads from the journal's start here.
    supervisor = next(r["supervisor_pid"] for r in journal(agent_dir, job_id) if r.get("state") == "starting")
    os.kill(supervisor, signal.SIGKILL)
    lock_free(agent_dir, job_id)
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: adopted(agent_dir, job_id), timeout=30, what="the adopted record")
        # logs -f's own serve found it: its start-up sweep, its job listing or its follow (a full id is
        # followed at once, without a listing), or the host's keeper, whichever came first.
        why = adopted(agent_dir, job_id)[0]["data"]["why"]
        assert any(
            w in why for w in ("serve at start", "a job listing", "a log follow", "the host's keeper")
        ), why
        assert follower.poll() is None, "logs -f must keep following an adopted job"
        go.touch()
        out, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert out.rstrip().endswith("bye"), (out[-300:], err)
    shown = json.loads(
        subprocess.run(
            [sys.executable, "-m", "tui", "inspect", job_id, "--json"],
            capture_output=True,
            text=True,
            cwd=workdir,
            timeout=60,
        ).stdout
    )
    assert shown["state"] == "exited" and shown["exit_code"] is None
    assert "exit code unknown: its supervisor was lost at" in shown["cause"]
    seen = steps(agent_dir, job_id)
    assert seen == list(range(len(seen)))


def test_a_lost_job_whose_processes_are_gone_gets_its_end_journaled(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"adopt-gone-{uuid.uuid4().hex}"
    go = workdir / "go"
    job = launch(client, workdir, [sys.executable, "-c", PRINTER, marker, str(go)])
    wait_for(lambda: pids_with(marker), what="the job")
    supervisor = next(
        r["supervisor_pid"] for r in journal(agent_dir, job["id"]) if r.get("state") == "starting"
    )
    os.kill(supervisor, signal.SIGKILL)
    lock_free(agent_dir, job["id"])
    go.touch()
    wait_for(lambda: not pids_with(marker), what="the job to exit on its own")
    final = wait_state(client, job["id"], {"exited", "failed", "stopped", "killed"})  # not `lost` forever
    assert final["exit_code"] is None and final["state"] == "exited"
    assert "exit code unknown: its supervisor was lost at" in final["cause"]
    # What it printed with no supervisor (its last lines) was parsed before the end was written.
    printed = (agent_dir / "jobs" / job["id"] / "0" / "output.log").read_text().count("step=")
    assert steps(agent_dir, job["id"]) == list(range(printed))


@pytest.mark.slow
@pytest.mark.parametrize("action", ["stop", "kill"])
def test_stop_or_kill_of_an_adopted_job_leaves_no_process(
    client: AgentClient, workdir: Path, agent_dir: Path, action: str
) -> None:
    marker = f"adopt-{action}-{uuid.uuid4().hex}"
    job = launch(client, workdir, [sys.executable, "-c", WITH_DAEMON, marker], heartbeat_interval=0.2)
    wait_for(lambda: len(pids_with(marker)) >= 2, what="the job and its setsid daemon")
    kill_supervisor(agent_dir, job["id"])
    client.request("jobs")
    record = wait_for(lambda: adopted(agent_dir, job["id"]), what="the adopted record")[0]
    final = client.request(
        action, job=job["id"], node="0", timeout=60, **({"grace": 2} if action == "stop" else {})
    )
    assert final["state"] == ("stopped" if action == "stop" else "killed")
    assert pids_with(marker) == []
    last = wait_for(
        lambda: (
            journal(agent_dir, job["id"])[-1]
            if journal(agent_dir, job["id"])[-1]["kind"] == "state"
            else None
        ),
        what="the end journaled",
    )
    assert last["state"] == final["state"] and last["seq"] > record["seq"]


def test_replay_drops_exactly_what_the_journal_already_holds() -> None:
    from remote_agent.supervision.lostjob import LostJob, OutputReplay

    lost = LostJob()
    records = [
        {"seq": 1, "t": 10.0, "kind": "state", "state": "starting", "supervisor_pid": 7},
        {"seq": 2, "t": 10.5, "kind": "state", "state": "running", "pid": 8},
        {"seq": 3, "t": 11.0, "kind": "metric", "values": {"step": 0}},
        {"seq": 4, "t": 11.5, "kind": "heartbeat", "output_offset": 7},
        {"seq": 5, "t": 12.0, "kind": "metric", "values": {"step": 1}},
        {"seq": 6, "t": 12.1, "kind": "event", "event": "budget_warning", "data": {"accrued": 1}},
        {"seq": 7, "t": 12.2, "kind": "event", "event": "checkpoint_saved", "data": {"step": 1}},
    ]
    for record in records:
        lost.fold(record)
    assert (lost.pid, lost.running_at, lost.previous_supervisor, lost.lost_at) == (8, 10.5, 7, 12.2)
    assert (
        lost.resume_offset == 7 and lost.last_values == {"step": 0} and lost.budget_warned and not lost.ended
    )
    replay = OutputReplay(lost.after_resume)
    again = [
        ("metric", {"values": {"step": 1}}),
        ("event", {"event": "checkpoint_saved", "data": {"step": 1}}),
        ("metric", {"values": {"step": 2}}),
    ]
    assert replay.fresh(again) == [("metric", {"values": {"step": 2}})]
    assert replay.fresh([("metric", {"values": {"step": 1}})]) == [("metric", {"values": {"step": 1}})]


@pytest.mark.slow
def test_an_adopter_that_is_lost_too_is_adopted_in_turn(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    marker = f"adopt-twice-{uuid.uuid4().hex}"
    go = workdir / "go"
    job = launch(client, workdir, [sys.executable, "-c", PRINTER, marker, str(go)], heartbeat_interval=0.2)
    kill_supervisor(agent_dir, job["id"])
    wait_for(lambda: client.request("jobs") and adopted(agent_dir, job["id"]), what="the first adoption")
    first = adopted(agent_dir, job["id"])[0]["data"]["supervisor_pid"]
    wait_for(
        lambda: [
            r
            for r in journal(agent_dir, job["id"])
            if r.get("kind") == "heartbeat" and r["seq"] > adopted(agent_dir, job["id"])[0]["seq"]
        ],
        what="the adopter's heartbeat",
    )
    os.kill(first, signal.SIGKILL)
    # Not its lock seen free: the keeper wakes the moment an adopter ends (a pidfd), and a second
    # adopter started by a listing beside the keeper's may be waiting on the lock already.
    wait_for(lambda: not alive(first), what="the first adopter gone")
    wait_for(
        lambda: client.request("jobs") and len(adopted(agent_dir, job["id"])) == 2, what="the second adoption"
    )
    assert adopted(agent_dir, job["id"])[1]["data"]["previous_supervisor_pid"] == first
    go.touch()
    final = wait_state(client, job["id"], {"exited", "failed", "stopped", "killed"})
    assert final["state"] == "exited" and "exit code unknown" in final["cause"]
    seen = steps(agent_dir, job["id"])
    assert seen == list(range(len(seen))) and pids_with(marker) == []


@pytest.mark.slow
def test_an_adopted_job_keeps_its_idle_stop(
    agent_dir: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # NVML faked at its import boundary (as in test_agent_autostop): one GPU at 2 %.
    fake = Path(__file__).resolve().parent / "fakes" / "nvml"
    monkeypatch.setenv(
        "PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaaaaaa-0000-0000-0000-000000000000", "util": 2}])
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")]))
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    try:
        marker = f"adopt-idle-{uuid.uuid4().hex}"
        # Not before 6 s from the job's start: the first supervisor is lost well before that.
        idle = {"below_pct": 10, "minutes": 0.02, "grace_minutes": 0.1}
        job = launch(
            client,
            workdir,
            [sys.executable, "-c", PRINTER, marker],
            env={"CUDA_VISIBLE_DEVICES": "0"},
            idle_stop=idle,
            gpu_interval=0.2,
            heartbeat_interval=0.2,
        )
        kill_supervisor(agent_dir, job["id"])
        assert not [r for r in journal(agent_dir, job["id"]) if r.get("event") == "autostop"]
        wait_for(lambda: client.request("jobs") and adopted(agent_dir, job["id"]), what="the adoption")
        final = wait_state(client, job["id"], {"stopped", "exited", "failed", "killed"}, timeout=60)
        assert final["state"] == "stopped" and final["reason"].startswith(
            "idle: GPU utilization under 10%"
        ), final
        rule = next(r for r in journal(agent_dir, job["id"]) if r.get("event") == "autostop")
        assert rule["seq"] > adopted(agent_dir, job["id"])[0]["seq"] and rule["data"]["rule"] == "idle"
        assert pids_with(marker) == []
    finally:
        client.close()
