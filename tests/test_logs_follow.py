"""`gpudeck logs -f` is pushed by the agent (`follow`): every byte exactly once across connection
cuts, over the local pipe and over real SSH, for a job that prints non-UTF-8 bytes and partial
lines; it ends with the job's code; a followed job that is removed ends it with one clear line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.jobs import alive
from tests.support.sshd import SshHome, serve_pids
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient

# Partial lines (a write, a pause, the rest), raw non-UTF-8 bytes, until the flag file exists;
# then a last line without its newline and exit code 7.
MESSY = r"""
import os, sys, time
flag, i, w = sys.argv[1], 0, sys.stdout.buffer
while not os.path.exists(flag):
    i += 1
    w.write(b"part %d " % i); w.flush()
    time.sleep(0.002)
    w.write(b"\xff\xfe\x80 rest %d\r\n" % i if i % 3 else b"plain %d\n" % i); w.flush()
    time.sleep(0.002)
w.write(b"no newline at the end \xc3"); w.flush()
sys.exit(7)
"""
WAITS = (
    "import os, sys, time\nprint('hi', flush=True)\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
)


def _follow(job_id: str, tmp_path: Path, name: str) -> tuple[subprocess.Popen[bytes], Path, Path]:
    out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        stdout=open(out, "wb"),  # noqa: SIM115
        stderr=open(err, "wb"),  # noqa: SIM115
        cwd=tmp_path,
        env=dict(os.environ),
    )  # noqa: SIM115
    return proc, out, err


def _cuts_then_end(job_id: str, agent_dir: Path, flag: Path, tmp_path: Path, cut, cuts: int) -> None:
    """Follow the job, cut the follower's connection `cuts` times mid-stream, end the job, compare."""
    proc, out, err = _follow(job_id, tmp_path, "follow")
    try:
        for _ in range(cuts):
            size = out.stat().st_size
            wait_for(lambda: serve_pids(agent_dir), timeout=30, what="the follower connected")
            wait_for(lambda s=size: out.stat().st_size > s, timeout=30, what="output flowing")
            old = serve_pids(agent_dir)
            cut(old)
            wait_for(lambda o=old: not [p for p in o if alive(p)], timeout=10, what="the cut serve gone")
        size = out.stat().st_size
        wait_for(lambda: out.stat().st_size > size, timeout=30, what="output flowing after the last cut")
        flag.touch()
        assert proc.wait(timeout=60) == 7, err.read_text()
    finally:
        proc.kill()
    printed = (agent_dir / "jobs" / job_id / "0" / "output.log").read_bytes()
    assert printed.endswith(b"no newline at the end \xc3") and b"\xff\xfe\x80" in printed
    assert out.read_bytes() == printed  # every byte, exactly once, in order
    said = err.read_text()
    # Every cut is said: as a lost connection, or as a failed try when it hit a reconnect mid-way
    # (the client's queue can still be printing when the next cut comes).
    assert said.count("connection lost") + said.count("reconnect failed") >= cuts and "reconnected" in said


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.slow
def test_local_pipe_cuts_lose_and_repeat_no_byte(gpudeck_home: Path, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    (gpudeck_home / "config.toml").write_text("[ssh]\nbackoff_initial = 0.05\nbackoff_max = 0.2\n")
    flag = tmp_path / "stop-now"
    job_id = gpudeck("run", "--", sys.executable, "-c", MESSY, str(flag), cwd=tmp_path).stdout.strip()
    # Killing the follower's own `serve` child is what a broken pipe looks like to it.
    _cuts_then_end(job_id, gpudeck_home / "local-agent", flag, tmp_path, _kill_all, cuts=3)


@pytest.mark.slow
def test_ssh_cuts_lose_and_repeat_no_byte(ssh_home: SshHome, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    ssh_home.trust()
    ssh_home.add_host()
    ssh_home.ssh_settings(alive_timeout=2.0, backoff_initial=0.05, backoff_max=0.3)
    flag = tmp_path / "stop-now"
    job_id = gpudeck(
        "run", "--host", "box", "--", sys.executable, "-c", MESSY, str(flag), cwd=tmp_path
    ).stdout.strip()
    _cuts_then_end(job_id, ssh_home.agent_dir, flag, tmp_path, lambda pids: ssh_home.server.cut(), cuts=3)


@pytest.mark.slow
def test_a_job_removed_under_a_frozen_follower_ends_it_with_one_line(
    gpudeck_home: Path, tmp_path: Path
) -> None:
    """The follower's serve sleeps through the job's end and its `rm`: on waking it finds no end
    to report. One line saying so, exit 3 (no such job) — not `internal error: StopIteration`."""
    from tests.conftest import gpudeck

    flag = tmp_path / "stop-now"
    job_id = gpudeck("run", "--", sys.executable, "-c", WAITS, str(flag), cwd=tmp_path).stdout.strip()
    agent_dir = gpudeck_home / "local-agent"
    proc, out, err = _follow(job_id, tmp_path, "follow")
    frozen: list[int] = []
    try:
        wait_for(lambda: out.read_bytes() == b"hi\n", timeout=30, what="the first line printed")
        frozen = serve_pids(agent_dir)
        assert len(frozen) == 1
        os.kill(frozen[0], signal.SIGSTOP)
        flag.touch()
        wait_for(
            lambda: gpudeck("rm", job_id, cwd=tmp_path).returncode == 0,
            timeout=30,
            what="the ended job removed",
        )
        os.kill(frozen[0], signal.SIGCONT)
        frozen = []
        assert proc.wait(timeout=30) == 3
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        proc.kill()
    assert out.read_bytes() == b"hi\n"
    lines = err.read_text().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], lines
    assert f"job {job_id}" in lines[0] and "removed" in lines[0], lines


@pytest.mark.slow
def test_a_job_removed_while_the_follower_was_cut_off_ends_it_with_one_line(
    gpudeck_home: Path, tmp_path: Path
) -> None:
    """Reconnected after the job ended and was removed: the re-follow is refused; one line, exit 3."""
    from tests.conftest import gpudeck

    (gpudeck_home / "config.toml").write_text("[ssh]\nbackoff_initial = 0.05\nbackoff_max = 0.2\n")
    flag = tmp_path / "stop-now"
    job_id = gpudeck("run", "--", sys.executable, "-c", WAITS, str(flag), cwd=tmp_path).stdout.strip()
    agent_dir = gpudeck_home / "local-agent"
    proc, out, err = _follow(job_id, tmp_path, "follow")
    try:
        wait_for(lambda: out.read_bytes() == b"hi\n", timeout=30, what="the first line printed")
        os.kill(proc.pid, signal.SIGSTOP)  # the follower sleeps through the cut, the end and the rm
        _kill_all(serve_pids(agent_dir))
        flag.touch()
        wait_for(
            lambda: gpudeck("rm", job_id, cwd=tmp_path).returncode == 0,
            timeout=30,
            what="the ended job removed",
        )
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=30) == 3
    finally:
        os.kill(proc.pid, signal.SIGCONT) if proc.poll() is None else None
        proc.kill()
    assert out.read_bytes() == b"hi\n"
    said = err.read_text()
    lines = [line for line in said.splitlines() if "reconnect" not in line and "connection lost" not in line]
    assert len(lines) == 1 and "internal error" not in lines[0], said
    assert f"job {job_id}" in lines[0] and "removed" in lines[0], lines


@pytest.mark.slow  # the everyday subset stays under a minute serially
def test_follow_pushes_bounded_contiguous_chunks_then_one_end(client: AgentClient, workdir: Path) -> None:
    """3 MB printed at once: chunks of at most CHUNK_BYTES, back to back from the asked offset, the
    file's bytes exactly; then one end marker with the job's exit; `unfollow` answers after it."""
    import base64
    import queue

    from remote_agent.serving.outputhub import CHUNK_BYTES
    from tests.support.jobs import launch

    loud = "import sys\nw = sys.stdout.buffer\nfor i in range(30000): w.write(b'%05d \\xff' % i + b'x' * 93 + b'\\n')\nsys.exit(3)"
    job = launch(client, workdir, [sys.executable, "-c", loud])
    assert client.request("follow", job=job["id"], node="0", offset=1000) == {"offset": 1000}
    pushes = []
    while not pushes or pushes[-1]["push"] != "output_end":
        pushes.append(client.outputs.get(timeout=60))
    chunks, end = pushes[:-1], pushes[-1]
    data = [base64.b64decode(p["data"]) for p in chunks]
    assert all(0 < len(d) <= CHUNK_BYTES for d in data)
    assert [p["offset"] for p in chunks] == [1000 + sum(len(d) for d in data[:i]) for i in range(len(data))]
    output = Path(client.request("hello")["agent_dir"]) / "jobs" / job["id"] / "0" / "output.log"
    assert b"".join(data) == output.read_bytes()[1000:] and len(output.read_bytes()) == 30000 * 101
    assert end == {
        "push": "output_end",
        "job": job["id"],
        "node": "0",
        "offset": 30000 * 101,
        "state": "failed",
        "exit_code": 3,
        "signal": None,
        "code_unknown": False,
        "error": None,
    }
    assert client.request("unfollow", job=job["id"], node="0") == {"was_following": False}
    with pytest.raises(queue.Empty):
        client.outputs.get(timeout=0.3)


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _blocked_writing(pid: int) -> bool:
    return any(
        (task / "wchan").read_text().endswith("pipe_write") for task in Path(f"/proc/{pid}/task").iterdir()
    )


def _read_position(pid: int, path: Path) -> int:
    """How far process pid has read the file at path (its open descriptor's offset), or -1."""
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) == str(path):
                return int((Path(f"/proc/{pid}/fdinfo") / fd.name).read_text().split()[1])
        except OSError:
            continue
    return -1


@pytest.mark.slow
def test_a_follower_that_cannot_write_holds_the_stream_back(gpudeck_home: Path, tmp_path: Path) -> None:
    """Nobody reads `logs -f`'s stdout while the job prints 96 MiB: the CLI stops reading its agent,
    serve stops reading the file, and neither holds the output in memory; then every byte comes."""
    from tests.conftest import gpudeck

    total = 96 << 20
    loud = f"import sys\nline = b'y' * 1023 + b'\\n'\nfor _ in range({total // 1024}): sys.stdout.buffer.write(line)\n"
    job_id = gpudeck("run", "--", sys.executable, "-c", loud, cwd=tmp_path).stdout.strip()
    agent_dir = gpudeck_home / "local-agent"
    output = agent_dir / "jobs" / job_id / "0" / "output.log"
    wait_for(lambda: output.stat().st_size == total, timeout=60, what="the job's whole output on disk")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env=dict(os.environ),
    )
    try:
        wait_for(lambda: serve_pids(agent_dir), timeout=30, what="the follower's serve")
        serve = serve_pids(agent_dir)[0]
        seen: list[int] = []

        def held_back_or_all_read() -> bool:
            # Held back: both blocked on full pipes, serve's read position still for 3 looks.
            seen.append(
                _read_position(serve, output)
                if _blocked_writing(proc.pid) and _blocked_writing(serve)
                else -1
            )
            return seen[-1] >= 16 << 20 or (len(seen) >= 3 and seen[-1] >= 0 and len(set(seen[-3:])) == 1)

        wait_for(held_back_or_all_read, timeout=60, interval=0.05, what="the stream held back")
        assert seen[-1] < 16 << 20, f"serve read {seen[-1]} bytes ahead of a follower that cannot write"
        assert _rss_mib(proc.pid) < 64 and _rss_mib(serve) < 64, (_rss_mib(proc.pid), _rss_mib(serve))
        assert proc.stdout is not None
        with open(output, "rb") as expected:
            while block := proc.stdout.read(1 << 20):
                assert block == expected.read(len(block))
            assert expected.read() == b""
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()


@pytest.mark.slow
def test_metrics_follower_of_a_job_removed_while_cut_off_ends_with_one_line(
    gpudeck_home: Path, tmp_path: Path
) -> None:
    """`metrics -f` re-tails after the cut; the agent refuses (the job is gone): one line, exit 3,
    where it used to retry that re-tail for ever without a word."""
    from tests.conftest import gpudeck

    (gpudeck_home / "config.toml").write_text("[ssh]\nbackoff_initial = 0.05\nbackoff_max = 0.2\n")
    flag = tmp_path / "stop-now"
    waits = WAITS.replace("print('hi'", "print('step=1 loss=0.5'")
    job_id = gpudeck("run", "--", sys.executable, "-c", waits, str(flag), cwd=tmp_path).stdout.strip()
    agent_dir = gpudeck_home / "local-agent"
    out, err = tmp_path / "metrics.out", tmp_path / "metrics.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "metrics", "-f", job_id],
        stdout=open(out, "wb"),  # noqa: SIM115
        stderr=open(err, "wb"),  # noqa: SIM115
        cwd=tmp_path,
        env=dict(os.environ),
    )  # noqa: SIM115
    try:
        wait_for(lambda: b"loss" in out.read_bytes(), timeout=30, what="the first point printed")
        os.kill(proc.pid, signal.SIGSTOP)
        _kill_all(serve_pids(agent_dir))
        flag.touch()
        wait_for(
            lambda: gpudeck("rm", job_id, cwd=tmp_path).returncode == 0,
            timeout=30,
            what="the ended job removed",
        )
        os.kill(proc.pid, signal.SIGCONT)
        assert proc.wait(timeout=30) == 3
    finally:
        os.kill(proc.pid, signal.SIGCONT) if proc.poll() is None else None
        proc.kill()
    said = err.read_text()
    lines = [line for line in said.splitlines() if "reconnect" not in line and "connection lost" not in line]
    assert len(lines) == 1 and f"job {job_id}" in lines[0] and "removed" in lines[0], said


# The host's python: the probe (`-c …`) says it started and waits for the gate; anything else runs at once.
GATED_PYTHON = '#!/bin/sh\ncase "$1" in -c) : > "{mark}"; while [ ! -e "{gate}" ]; do sleep 0.02; done;; esac\nexec {py} "$@"\n'


@pytest.mark.slow
def test_a_cut_during_the_first_connection_is_retried_and_said(ssh_home: SshHome, tmp_path: Path) -> None:
    from tests.conftest import gpudeck

    mark, gate = tmp_path / "probing", tmp_path / "gate"
    python = tmp_path / "python-gated"
    python.write_text(GATED_PYTHON.format(mark=mark, gate=gate, py=sys.executable))
    python.chmod(0o755)
    ssh_home.trust()
    ssh_home.add_host(python=str(python))
    ssh_home.ssh_settings(alive_timeout=2.0, backoff_initial=0.05, backoff_max=0.3)
    gate.touch()
    job_id = gpudeck(
        "run", "--host", "box", "--", sys.executable, "-c", "print('the first line')", cwd=tmp_path
    ).stdout.strip()
    gate.unlink()
    mark.unlink(missing_ok=True)
    from tui.remote.deploy_memo import memo_path

    memo_path().unlink(missing_ok=True)  # a client that has not probed this host yet
    proc, out, err = _follow(job_id, tmp_path, "first")
    try:
        wait_for(mark.exists, timeout=30, what="the follower's first connection probing python")
        assert ssh_home.server.cut() > 0
        gate.touch()
        assert proc.wait(timeout=60) == 0, err.read_text()
    finally:
        proc.kill()
    assert out.read_bytes().endswith(b"the first line\n")  # after what the login shell printed
    said = err.read_text()
    assert "box: connection lost: " in said and "reconnecting" in said and "box: reconnected" in said, said
