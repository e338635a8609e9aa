"""Nothing lost, nothing stuck: stop and kill with the disk full or the supervisor frozen, the
supervisor surviving its own IO errors, readers surviving any record, bounded records."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.storage.records import expand_all
from tests.conftest import gpudeck
from tests.support.jobs import journal, launch, pids_with, wait_state
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

# Prints metrics and lives through a full disk itself (its writes to output.log fail too).
PRINTER = (
    "import os, time\nfor i in range(10**6):\n    try:\n        os.write(1, b'step=%d loss=%.4f\\n' % (i, 1 / (i + 1)))\n"
    "    except OSError:\n        pass\n    time.sleep(0.02)\n"
)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "5m") -> Iterator[Path]:
    """A tmpfs of `size` mounted on path (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs for a full disk")
    path.mkdir(parents=True, exist_ok=True)
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    ).returncode:
        pytest.skip("mount -t tmpfs failed (no CAP_SYS_ADMIN in this container)")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fill(disk: Path) -> Path:
    """Fill the disk to the last byte; returns the filler (unlink it to free the disk)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (1 << 20, 4096, 1):  # then the last partial block too
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def write_calls(pid: int) -> int:
    """write(2) calls the process made (/proc/PID/io syscw)."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise AssertionError("no syscw")


def supervisor_of(agent_dir: Path, job_id: str) -> int:
    return next(r["supervisor_pid"] for r in journal(agent_dir, job_id) if r.get("state") == "starting")


def valid_journal(agent_dir: Path, job_id: str) -> list[dict]:
    """Every line whole JSON, seq gap-free from 1."""
    raw = (agent_dir / "jobs" / job_id / "0" / "events.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    records = expand_all(json.loads(line) for line in raw.splitlines())  # a `points` line: its points
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    return records


@pytest.fixture
def full_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """GPUDECK_HOME on a 5 MB tmpfs (the local agent dir and state.db are on it)."""
    with small_disk(tmp_path / "disk") as disk:
        user = tmp_path / "user"
        user.mkdir()
        (user / ".profile").write_text("")
        monkeypatch.setenv("GPUDECK_HOME", str(disk))
        monkeypatch.setenv("HOME", str(user))
        try:
            yield disk
        finally:
            from tests.support.cleanup import kill_all_jobs

            kill_all_jobs(disk / "local-agent")


@pytest.mark.slow
@pytest.mark.parametrize("action", ["stop", "kill"])
def test_stop_and_kill_work_on_a_full_disk(full_home: Path, workdir: Path, action: str) -> None:
    marker = f"full-{action}-{uuid.uuid4().hex}"
    job_id = gpudeck("run", "--", sys.executable, "-c", PRINTER, marker, cwd=workdir).stdout.strip()
    agent_dir = full_home / "local-agent"
    wait_for(lambda: pids_with(marker), what="the job")
    filler = fill(full_home)
    args = ["stop", job_id, "--grace", "5"] if action == "stop" else ["kill", job_id]
    result = gpudeck(*args, cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "internal error" not in result.stderr
    assert pids_with(marker) == []
    # The supervisor lived through it and writes the end once the disk has room again.
    filler.unlink()
    want = "killed" if action == "kill" else "stopped"
    wait_for(
        lambda: valid_journal(agent_dir, job_id)[-1].get("state") == want,
        timeout=30,
        what=f"{want} journaled",
    )
    assert gpudeck("rm", job_id, cwd=workdir).returncode == 0


@pytest.mark.slow
def test_the_supervisor_survives_a_full_disk_and_says_what_it_dropped(full_home: Path, workdir: Path) -> None:
    agent_dir = full_home / "local-agent"
    client = AgentClient(LocalTransport(agent_dir))
    client.connect()
    try:
        marker = f"survivor-{uuid.uuid4().hex}"
        job = launch(client, workdir, [sys.executable, "-c", PRINTER, marker], heartbeat_interval=0.1)
        wait_for(lambda: len(journal(agent_dir, job["id"])) > 5, what="metrics")
        supervisor = supervisor_of(agent_dir, job["id"])
        filler = fill(full_home)
        size = (agent_dir / "jobs" / job["id"] / "0" / "events.jsonl").stat().st_size
        # Heartbeats every 0.1 s: wait for the supervisor to have tried (and failed) a few writes.
        # (Appends may still fit in the file's last page: wait until writes no longer grow it.)
        events = agent_dir / "jobs" / job["id"] / "0" / "events.jsonl"
        seen = {"size": events.stat().st_size, "calls": write_calls(supervisor)}

        def failing() -> bool:
            size = events.stat().st_size
            if size != seen["size"]:
                seen.update(size=size, calls=write_calls(supervisor))
                return False
            return write_calls(supervisor) >= seen["calls"] + 5

        wait_for(failing, timeout=60, what="journal writes failing on the full disk")
        last_seq = valid_journal(agent_dir, job["id"])[-1]["seq"]
        filler.unlink()
        notes = wait_for(
            lambda: [r for r in valid_journal(agent_dir, job["id"]) if r.get("event") == "disk_full"],
            timeout=30,
            what="the disk_full note",
        )
        assert notes[0]["seq"] == last_seq + 1  # gap-free: dropped records never got a seq
        assert notes[0]["data"]["records_dropped"] >= 1 and notes[0]["data"]["bytes_dropped"] > 0
        assert "disk full" in notes[0]["data"]["error"]
        assert (agent_dir / "jobs" / job["id"] / "0" / "events.jsonl").stat().st_size > size
        assert os.kill(supervisor, 0) is None and pids_with(marker), "supervisor and job both lived on"
        assert client.request("kill", job=job["id"], node="0", timeout=30)["state"] == "killed"
    finally:
        client.close()


STUBBORN_PRINTER = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + PRINTER


@pytest.mark.slow
def test_a_stop_on_a_full_disk_keeps_its_grace_and_reason(full_home: Path, workdir: Path) -> None:
    """No room for control.json: the request still reaches the supervisor whole (the slot
    allocated at launch), so --grace 1 is not the spec's 60 s and the reason is the caller's."""
    marker = f"full-grace-{uuid.uuid4().hex}"
    job_id = gpudeck(
        "run", "--grace", "60", "--", sys.executable, "-c", STUBBORN_PRINTER, marker, cwd=workdir
    ).stdout.strip()
    agent_dir = full_home / "local-agent"
    wait_for(lambda: pids_with(marker), what="the job")
    filler = fill(full_home)
    result = gpudeck("stop", job_id, "--grace", "1", cwd=workdir, timeout=120)
    # Before: the supervisor waited out the spec's 60 s and serve gave up after 1 + 30 s.
    assert result.returncode == 0, result.stderr
    assert pids_with(marker) == []
    filler.unlink()
    final = wait_for(
        lambda: (r := valid_journal(agent_dir, job_id)[-1]).get("state") and r,
        timeout=30,
        what="the end journaled",
    )
    assert final["state"] == "stopped" and final["reason"] == "user" and final["signal"] == "SIGKILL"


@pytest.mark.slow
def test_run_on_a_full_disk_leaves_no_phantom_job(full_home: Path, workdir: Path) -> None:
    first = gpudeck("run", "--", "true", cwd=workdir)  # state.db and the agent dir exist
    assert first.returncode == 0, first.stderr
    filler = fill(full_home)
    result = gpudeck("run", "--name", "phantom", "--", "sleep", "100", cwd=workdir)
    assert result.returncode != 0
    assert "disk full" in result.stderr and "internal error" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    filler.unlink()
    listed = gpudeck("ps", "--all", "--json", cwd=workdir)
    assert listed.returncode == 0, listed.stderr
    assert [j for j in json.loads(listed.stdout) if j["name"] == "phantom"] == []


@pytest.mark.slow
@pytest.mark.parametrize("action", ["kill", "stop"])
def test_kill_or_stop_with_a_frozen_supervisor_ends_the_tree(
    client: AgentClient, workdir: Path, agent_dir: Path, action: str
) -> None:
    marker = f"frozen-{uuid.uuid4().hex}"
    job = launch(client, workdir, [sys.executable, "-c", PRINTER, marker])
    wait_for(lambda: pids_with(marker), what="the job")
    supervisor = supervisor_of(agent_dir, job["id"])
    os.kill(supervisor, signal.SIGSTOP)
    try:
        final = client.request(
            action, job=job["id"], node="0", timeout=20, **({"grace": 5} if action == "stop" else {})
        )
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(supervisor, signal.SIGCONT)
    want = "killed" if action == "kill" else "stopped"
    assert final["state"] == want
    assert pids_with(marker) == []
    assert valid_journal(agent_dir, job["id"])[-1]["state"] == want


@pytest.mark.slow
def test_a_malformed_record_is_skipped_counted_and_breaks_nothing(gpudeck_home: Path, workdir: Path) -> None:
    agent_dir = gpudeck_home / "local-agent"
    done = gpudeck("run", "--name", "done", "--", "true", cwd=workdir).stdout.strip()
    live = gpudeck("run", "--name", "live", "--", "sleep", "60", cwd=workdir).stdout.strip()
    wait_for(
        lambda: '"exited"' in (agent_dir / "jobs" / done / "0" / "events.jsonl").read_text(), what="exit"
    )
    with open(agent_dir / "jobs" / done / "0" / "events.jsonl", "a") as f:
        last = len(journal(agent_dir, done))
        f.write(json.dumps({"seq": last + 1, "t": 1, "kind": "state", "state": ["exited"]}) + "\n")
        f.write('{"seq": "x", "kind": 5}\n')
        f.write(json.dumps({"seq": last + 2, "t": "soon", "kind": "metric", "values": [1]}) + "\n")
    ps = gpudeck("ps", "--all", cwd=workdir)
    assert ps.returncode == 0, ps.stderr
    assert done in ps.stdout and live in ps.stdout
    shown = gpudeck("inspect", done, "--json", cwd=workdir)
    assert json.loads(shown.stdout)["malformed"] == 3 and json.loads(shown.stdout)["state"] == "exited"
    assert "malformed journal records skipped: 3" in gpudeck("inspect", done, cwd=workdir).stdout
    assert gpudeck("logs", live, cwd=workdir).returncode == 0
    assert gpudeck("kill", live, cwd=workdir).returncode == 0


def test_very_long_output_lines_never_make_a_job_lost(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    script = "import sys\nfor i in range(3): print('x' * (2 << 20), flush=True)\nsys.exit(3)"
    job = launch(client, workdir, [sys.executable, "-c", script])
    final = wait_state(client, job["id"], {"failed", "lost"})
    assert final["state"] == "failed" and final["exit_code"] == 3
    records = valid_journal(agent_dir, job["id"])
    assert max(len(json.dumps(r)) for r in records) < 70 << 10
    assert any("more characters cut]" in line for line in final["tail"])
    # output.log keeps every byte: the cut is only in the record.
    assert (agent_dir / "jobs" / job["id"] / "0" / "output.log").stat().st_size == 3 * ((2 << 20) + 1)


def test_a_journal_line_longer_than_a_read_is_skipped(tmp_path: Path) -> None:
    from remote_agent.storage.journal import JournalReader

    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b'{"seq":1,"t":1,"kind":"heartbeat"}\n'
        + b'{"seq":2,"pad":"'
        + b"y" * (3 << 20)
        + b'"}\n'
        + b'{"seq":3,"t":1,"kind":"heartbeat"}\n'
    )
    reader = JournalReader(path)
    seqs = []
    while batch := reader.read_new():
        seqs += [r["seq"] for r in batch]
    assert seqs == [1, 3] and reader.skipped == 1


@pytest.mark.slow
@pytest.mark.timeout(900)  # a million lines parsed on a loaded 2-core machine: correctness, not speed
def test_every_metric_line_reaches_the_journal_however_fast_the_job_exits(
    client: AgentClient, workdir: Path, agent_dir: Path
) -> None:
    # 1,000,000 lines outlast the old 30 s cut here (917,117 of them were journaled before the fix).
    lines = int(os.environ.get("GPUDECK_TEST_DRAIN_LINES", "1000000"))
    script = (
        "import sys\nw = sys.stdout.write\n"
        f"for i in range({lines}):\n    w('step=%d loss=%.6f\\n' % (i, 1.0 / (i + 1)))\n"
    )
    job = launch(client, workdir, [sys.executable, "-c", script])
    final = wait_state(client, job["id"], {"exited", "failed", "lost"}, timeout=3600)
    assert final["state"] == "exited"
    metrics = sum(1 for r in valid_journal(agent_dir, job["id"]) if r["kind"] == "metric")
    assert metrics == lines


def test_a_job_dir_whose_launch_never_finished_can_be_killed_and_removed(
    client: AgentClient, agent_dir: Path
) -> None:
    import time

    from remote_agent.names import new_job_id
    from tests.support.jobs import job as job_obj

    job_id = new_job_id()
    directory = agent_dir / "jobs" / job_id / "0"
    directory.mkdir(parents=True)  # what a launch that died before writing its spec left (older agents)
    old = time.time() - 3600
    os.utime(directory, (old, old))
    seen = job_obj(client, job_id)
    assert seen["state"] == "lost", (seen, os.stat(directory).st_mtime, time.time())
    assert client.request("kill", job=job_id, node="0", timeout=30)["state"] == "lost"
    assert client.request("rm", job=job_id, node="0") == {"removed": job_id}
    assert not directory.exists()
