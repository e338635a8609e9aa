"""`gpudeck watch` end to end through the real CLI: a run started by hand (a real subprocess writing a
log it rotates and truncates) shows up in ps, logs, metrics and cost; stop ends the watch, not the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import alive, journal
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow  # a dozen CLI interpreters

WRITER = str(Path(__file__).parent / "support" / "rotating_writer.py")


def watched_steps(agent_dir: Path, job_id: str) -> list[int]:
    try:
        return [r["values"]["step"] for r in journal(agent_dir, job_id) if r["kind"] == "metric"]
    except (OSError, ValueError):
        return []


def test_a_hand_started_run_is_watched_read_only(gpudeck_home: Path, agent_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "nohup.out"
    (gpudeck_home / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 3.6\n")
    started = gpudeck("watch", str(log), "--name", "handrun")
    assert started.returncode == 0, started.stderr
    job_id = started.stdout.strip()
    copy = agent_dir / "jobs" / job_id / "0" / "output.log"
    run = subprocess.Popen(
        [
            sys.executable,
            WRITER,
            str(log),
            str(copy),
            "lines:5,rotate,lines:3,copytruncate,lines:2",
            "--linger",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: watched_steps(agent_dir, job_id) == list(range(1, 11)), what="10 points, each once")

        ps = gpudeck("ps")
        row = next(line for line in ps.stdout.splitlines() if line.startswith(job_id))
        assert "handrun (watch)" in row and "running" in row and " 10 " in row, ps.stdout
        as_json = next(j for j in json.loads(gpudeck("ps", "--json").stdout) if j["id"] == job_id)
        assert as_json["watch"] == {"path": str(log), "pid": None}
        assert [line.split()[0] for line in gpudeck("logs", "handrun").stdout.splitlines()] == [
            f"step={i}" for i in range(1, 11)
        ]
        points = [json.loads(line) for line in gpudeck("metrics", "handrun", "--json").stdout.splitlines()]
        assert [p["values"]["step"] for p in points] == list(range(1, 11))
        inspect = gpudeck("inspect", "handrun").stdout
        assert f"watching: {log} (read-only: no --pid)" in inspect

        for verb in ("kill", "restart"):
            refused = gpudeck(verb, "handrun")
            assert refused.returncode != 0 and "watches" in refused.stderr, refused.stderr
        stopped = gpudeck("stop", "handrun")
        assert stopped.returncode == 0, stopped.stderr
        assert "ended the watch" in stopped.stdout and "not touched" in stopped.stdout
        assert alive(run.pid)  # the run itself goes on

        # Priced as its host's share (the only job on a GPU-less host: all of it) while it was watched.
        records = journal(agent_dir, job_id)
        watched_s = next(r["t"] for r in records if r.get("state") == "stopped") - next(
            r["t"] for r in records if r.get("state") == "running"
        )
        cost = json.loads(gpudeck("cost", "--json").stdout)
        entry = next(j for j in cost["jobs"] if j["id"] == job_id)
        assert entry["accrued_usd"] == pytest.approx(
            watched_s * 3.6 / 3600, abs=1e-6
        )  # the report rounds to 6 places
    finally:
        run.kill()
        run.wait()


def test_stop_with_a_pid_stops_the_run(gpudeck_home: Path, agent_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    run = subprocess.Popen(
        [sys.executable, WRITER, str(log), str(tmp_path / "unused"), "lines:3", "--linger"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: log.exists() and log.read_text().count("\n") == 3, what="the run's lines")
        started = gpudeck("watch", str(log), "--pid", str(run.pid), "--grace", "5")
        assert started.returncode == 0, started.stderr
        job_id = started.stdout.strip()
        wait_for(lambda: watched_steps(agent_dir, job_id) == [1, 2, 3], what="3 points")
        stopped = gpudeck("stop", job_id)
        assert stopped.returncode == 0 and f"stopped (the watched run, pid {run.pid})" in stopped.stdout, (
            stopped
        )
        assert run.wait(timeout=10) == -15  # SIGTERM: the run's own default handler
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def test_watch_usage_errors_name_the_option(gpudeck_home: Path) -> None:
    bad = gpudeck("watch", "x.log", "--name", "bad name")
    assert bad.returncode == 2 and "--name" in bad.stderr
    bad_pid = gpudeck("watch", "x.log", "--pid", "1")
    assert bad_pid.returncode == 2 and "--pid 1" in bad_pid.stderr
