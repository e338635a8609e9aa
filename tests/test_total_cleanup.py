"""Total cleanup (#29, findings 7, 8, 9 and 14): truncated or emptied journals read as what they
are, followers end when the job ends, exit codes as documented, answers that say what happened."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from remote_agent.jobstate import supervisor_alive
from remote_agent.supervision.autostop import AutoStop
from tests.conftest import gpudeck
from tests.support.jobs import journal, pids_with
from tests.support.waiting import wait_for
from tests.test_agent_adoption import PRINTER, lock_free
from tests.test_agent_faults import fill, full_home  # noqa: F401  (a fixture)

# PRINTER that runs on when its output cannot be written (a full disk): PRINTER itself died of
# ENOSPC within seconds of the fill, and on a loaded machine before the test's stop came.
FULL_DISK_PRINTER = (
    "import sys, time\ni = 0\nwhile True:\n    try:\n"
    "        print('step=%d loss=%.6f' % (i, 1.0 / (i + 1)), flush=True)\n"
    "    except OSError:\n        pass\n    i += 1\n    time.sleep(0.02)\n"
)


def cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tui", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def journal_path(agent_dir: Path, job_id: str) -> Path:
    return agent_dir / "jobs" / job_id / "0" / "events.jsonl"


def ended_by_itself(gpudeck_home: Path, workdir: Path) -> str:
    run = gpudeck("run", "--", "true", cwd=workdir)
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    wait_for(
        lambda: '"exited"' in journal_path(gpudeck_home / "local-agent", job_id).read_text(), what="its end"
    )
    return job_id


@pytest.mark.slow
def test_metrics_f_ends_when_a_job_whose_journal_was_cut_ends(gpudeck_home: Path, workdir: Path) -> None:
    agent_dir = gpudeck_home / "local-agent"
    marker = f"cut-{uuid.uuid4().hex}"
    run = gpudeck("run", "--", sys.executable, "-c", PRINTER, marker, cwd=workdir)
    job_id = run.stdout.strip()
    path = journal_path(agent_dir, job_id)
    wait_for(lambda: sum(r["kind"] == "metric" for r in journal(agent_dir, job_id)) > 50, what="points")
    follower = cli("metrics", "-f", job_id, cwd=workdir)
    try:
        assert follower.stdout is not None
        assert "step=" in follower.stdout.readline()  # it follows
        wait_for(lambda: path.stat().st_size > 8000, what="a longer journal")
        data = path.read_bytes()
        with open(path, "r+b") as f:  # cut at a line's end, well before where the follower read to
            f.truncate(data.rfind(b"\n", 0, len(data) // 4) + 1)
        assert gpudeck("stop", job_id, "--grace", "5", cwd=workdir).returncode == 0
        out, err = follower.communicate(timeout=60)  # before the fix: never ends
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    assert pids_with(marker) == []


@pytest.mark.slow
def test_an_ended_job_whose_journal_was_emptied_reads_as_such_and_can_be_removed(
    gpudeck_home: Path, workdir: Path
) -> None:
    job_id = ended_by_itself(gpudeck_home, workdir)
    journal_path(gpudeck_home / "local-agent", job_id).write_bytes(b"")
    shown = json.loads(gpudeck("inspect", job_id, "--json", cwd=workdir).stdout)
    assert shown["state"] == "exited", shown  # before the fix: `starting`, and rm refused
    assert "journal" in shown["cause"] and "emptied" in shown["cause"]
    removed = gpudeck("rm", job_id, cwd=workdir)
    assert removed.returncode == 0, removed.stderr


def test_logs_f_exits_1_when_the_exit_code_is_unknown(gpudeck_home: Path, workdir: Path) -> None:
    agent_dir = gpudeck_home / "local-agent"
    marker = f"unknown-{uuid.uuid4().hex}"
    go = workdir / "go"
    job_id = gpudeck("run", "--", sys.executable, "-c", PRINTER, marker, str(go), cwd=workdir).stdout.strip()
    wait_for(lambda: pids_with(marker), what="the job")
    supervisor = next(r["supervisor_pid"] for r in journal(agent_dir, job_id) if r.get("state") == "starting")
    os.kill(supervisor, signal.SIGKILL)
    lock_free(agent_dir, job_id)
    go.touch()
    wait_for(lambda: not pids_with(marker), what="the job to end with nobody to see its code")
    follow = gpudeck("logs", "-f", job_id, cwd=workdir)
    assert follow.stdout.rstrip().endswith("bye"), follow.stderr
    assert follow.returncode == 1  # as the README says; before the fix: 0


@pytest.mark.slow
def test_stop_of_an_already_ended_job_says_it_had_ended(gpudeck_home: Path, workdir: Path) -> None:
    job_id = ended_by_itself(gpudeck_home, workdir)
    for verb in ("stop", "kill"):
        said = gpudeck(verb, job_id, cwd=workdir)
        assert said.returncode == 0, said.stderr
        assert said.stdout.strip() == f"{job_id} had already exited (exit code 0): nothing to {verb}"
        answer = json.loads(gpudeck(verb, job_id, "--json", cwd=workdir).stdout)
        assert answer["state"] == "exited" and answer["already_ended"] is True


def test_an_idle_stop_under_a_minute_says_its_seconds() -> None:
    now = [1000.0]
    events: list[tuple] = []
    rule = {"below_pct": 5.0, "minutes": 0.25, "grace_minutes": 0.0}
    auto = AutoStop({"idle_stop": rule}, lambda *a, **k: events.append((a, k)), clock=lambda: now[0])
    auto.on_gpus([0.0])
    now[0] += 15.0
    assert auto.check() == "idle: GPU utilization under 5% for 15 s"  # before the fix: "for 0 min"


@pytest.mark.slow
def test_multi_node_metrics_text_names_each_points_node(gpudeck_home: Path, workdir: Path) -> None:
    script = "for i in range(3): print('step=%d loss=0.5' % i, flush=True)"
    run = gpudeck(
        "run", "--nodes", "2", "--launcher", "none", "--", sys.executable, "-c", script, cwd=workdir
    )
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    for node in ("0", "1"):
        path = gpudeck_home / "local-agent" / "jobs" / job_id / node / "events.jsonl"
        wait_for(lambda p=path: p.exists() and '"exited"' in p.read_text(), what=f"node {node}'s end")
    lines = gpudeck("metrics", job_id, cwd=workdir).stdout.splitlines()
    assert len(lines) == 6
    assert sorted(line.split()[1:3] for line in lines) == [["node", "0"]] * 3 + [["node", "1"]] * 3, lines


@pytest.mark.slow
def test_a_job_whose_directory_was_deleted_is_listed_stoppable_and_its_followers_end(
    gpudeck_home: Path, workdir: Path
) -> None:
    agent_dir = gpudeck_home / "local-agent"
    marker = f"deleted-{uuid.uuid4().hex}"
    job_id = gpudeck("run", "--", sys.executable, "-c", PRINTER, marker, cwd=workdir).stdout.strip()
    wait_for(lambda: pids_with(marker), what="the job")
    logs = cli("logs", "-f", job_id, cwd=workdir)
    metrics = cli("metrics", "-f", job_id, cwd=workdir)
    try:
        for follower in (logs, metrics):
            assert follower.stdout is not None and "step=" in follower.stdout.readline()  # following
        # `rm -rf` racing the live supervisor's writes (a file made between the listing and the
        # rmdir: "Directory not empty") is repeated, as a user would.
        wait_for(
            lambda: (
                shutil.rmtree(agent_dir / "jobs" / job_id, ignore_errors=True),
                not (agent_dir / "jobs" / job_id).exists(),
            )[1],
            what="the job's directory deleted",
        )
        listed = json.loads(gpudeck("ps", "--all", "--json", cwd=workdir).stdout)
        found = [j for j in listed if j["id"] == job_id]
        assert found and "deleted" in (found[0].get("cause") or ""), listed  # before: not listed at all
        stopped = gpudeck("stop", job_id, "--grace", "5", cwd=workdir)  # before: "no job"
        assert stopped.returncode == 0, stopped.stderr
        assert pids_with(marker) == []
        assert not pids_with(str(agent_dir / "jobs" / job_id))  # its supervisor is gone too
        for follower in (logs, metrics):
            _, err = follower.communicate(timeout=30)  # before: metrics -f never ends
            assert follower.returncode != 0 and len(err.strip().splitlines()) == 1, err
            assert "deleted" in err or "removed" in err, err
    finally:
        for follower in (logs, metrics):
            if follower.poll() is None:
                follower.kill()


@pytest.mark.slow
def test_a_stop_on_a_full_disk_says_the_journal_is_behind_and_the_supervisor_does_not_wait_forever(
    full_home: Path,  # noqa: F811  (the fixture imported above)
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GPUDECK_JOURNAL_GIVE_UP", "3")  # seconds a supervisor waits for room (default 600)
    agent_dir = full_home / "local-agent"
    marker = f"full-behind-{uuid.uuid4().hex}"
    job_id = gpudeck("run", "--", sys.executable, "-c", FULL_DISK_PRINTER, marker, cwd=workdir).stdout.strip()
    wait_for(lambda: pids_with(marker), what="the job")
    filler = fill(full_home)
    # tmpfs gives a file its whole last page: the journal takes records until that slack is spent.
    journal_file = agent_dir / "jobs" / job_id / "0" / "events.jsonl"
    sizes: list[int] = []

    def journal_stalled() -> bool:
        sizes.append(journal_file.stat().st_size)
        return len(sizes) >= 5 and len(set(sizes[-5:])) == 1

    wait_for(journal_stalled, timeout=30, interval=0.2, what="the journal to stop taking records")
    said = gpudeck("stop", job_id, "--grace", "5", cwd=workdir)
    assert said.returncode == 0, said.stderr
    assert "journal" in said.stdout and "disk" in said.stdout, said.stdout  # before: "stopped in 0.4s"
    assert pids_with(marker) == []
    lock = agent_dir / "jobs" / job_id / "0" / "lock"
    wait_for(
        lambda: not supervisor_alive(lock), timeout=30, what="the supervisor to give up"
    )  # before: never
    assert gpudeck("ps", "--all", "--json", cwd=workdir).returncode == 0
    filler.unlink()

    def ended() -> dict | None:
        obj = json.loads(gpudeck("inspect", job_id, "--json", cwd=workdir).stdout)
        return obj if obj["state"] == "stopped" else None

    shown = wait_for(ended, timeout=30, interval=0.5, what="its end journaled once there is room")
    assert shown["reason"] == "user", shown  # what was asked, not a guess
