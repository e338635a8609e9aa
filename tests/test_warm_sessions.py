"""Issue 33, a warm connection's serving agent kept warm with it: the master keeps one `serve
--sessions` on the host (tui/remote/warm_serve.py) and each later command is a session of it. The
host's python is a wrapper that logs every start, so each `serve` started on the host is counted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.waiting import wait_for
from tests.test_warm_connections import Warm, alive, ok, warm  # noqa: F401  (warm: the fixture)


def use_counting_python(tmp_path: Path) -> Path:
    """box's python: a wrapper writing its arguments to a log, then the real interpreter."""
    log = tmp_path / "python-starts"
    wrapper = tmp_path / "python3"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    from tui.hosts_file import set_host_fields

    set_host_fields("box", {"python": str(wrapper)})
    return log


def serve_starts(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if " serve " in line] if log.exists() else []


def shared_serves(w: Warm) -> list[int]:
    """The pids of box's `serve --sessions` processes now (sshd runs them on this machine)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--sessions" in argv and str(w.home.agent_dir).encode() in argv and alive(int(pid)):
            found.append(int(pid))
    return found


@pytest.mark.slow  # several CLI runs over SSH
def test_a_second_ps_starts_no_new_serve(warm: Warm, tmp_path: Path) -> None:  # noqa: F811
    log = use_counting_python(tmp_path)
    ok("ps")
    (serve,) = shared_serves(warm)
    ok("ps")
    ok("ps", "--all")
    assert len(serve_starts(log)) == 1, serve_starts(log)  # three commands, one serve on the host
    assert "--sessions" in serve_starts(log)[0]
    assert shared_serves(warm) == [serve]
    assert warm.connections == 1


@pytest.mark.slow  # two CLI runs over SSH
def test_a_warm_command_loads_no_ssh_code(warm: Warm) -> None:  # noqa: F811
    ok("ps")  # the master up, and what the next command needs remembered
    probe = (
        "import runpy, sys\n"
        "sys.argv = ['gpudeck', 'ps', '--json']\n"
        "try:\n    runpy.run_module('tui', run_name='__main__')\nexcept SystemExit as exc:\n    code = exc.code\n"
        "heavy = ('paramiko', 'cryptography', 'textual', 'boto3', 'botocore', 'invoke')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + probe], capture_output=True, text=True, timeout=120
    )
    assert json.loads(done.stdout) == []  # both hosts answered: no jobs
    assert json.loads(done.stderr.splitlines()[-1]) == []
    assert warm.connections == 1


@pytest.mark.slow  # a job, a follower and a listing over SSH
def test_a_follower_and_a_listing_at_once_each_get_their_own(warm: Warm, tmp_path: Path) -> None:  # noqa: F811
    log = use_counting_python(tmp_path)
    code = "import time\nfor i in range(100000):\n    print('tick', i, flush=True); time.sleep(0.05)"
    job = json.loads(ok("run", "--host", "box", "--json", "--", sys.executable, "-c", code).stdout)["id"]
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follower.stdout is not None
        ticks = (line for line in follower.stdout if line.startswith("tick "))  # after the login's chatter
        first = [next(ticks) for _ in range(3)]
        listed = json.loads(ok("ps", "--json").stdout)  # while the follower's session streams
        assert [j["id"] for j in listed] == [job]
        more = [follower.stdout.readline() for _ in range(3)]
        assert all(line.startswith("tick ") for line in more), more  # no answer of the listing's
        numbers = [int(line.split()[1]) for line in first + more]
        assert numbers == list(range(numbers[0], numbers[0] + 6))  # nothing lost or crossed
    finally:
        follower.send_signal(signal.SIGINT)
        _, err = follower.communicate(timeout=60)
    assert "Traceback" not in err
    assert len(serve_starts(log)) == 1  # run, logs -f and ps: sessions of one serve
    ok("kill", job)


@pytest.mark.slow  # several CLI runs over SSH
def test_a_killed_serve_is_replaced_without_a_word(warm: Warm) -> None:  # noqa: F811
    ok("ps")
    (first,) = shared_serves(warm)
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not alive(first), timeout=30, what="the serve's death")
    done = ok("ps")
    assert done.stderr == ""
    (second,) = wait_for(lambda: shared_serves(warm), timeout=30, what="a new shared serve")
    assert second != first
    assert warm.connections == 1  # the same master, the same connection


def test_another_agent_build_gets_its_own_serve_and_the_old_one_ends(warm: Warm) -> None:  # noqa: F811
    """An upgrade: the next command names another zipapp; the master starts a serve of it and
    ends the old one (no session on it), so nobody is served by the old agent."""
    from tui.hosts_file import load_hosts
    from tui.remote.warm_channel import WarmChannel, WarmTransport
    from tui.remote.warm_paths import socket_path

    ok("ps")
    (old,) = shared_serves(warm)
    agents = warm.home.agent_dir / "agents"
    (pyz,) = agents.glob("*.pyz")
    newer = agents / "0123456789abcdef.pyz"
    newer.write_bytes(pyz.read_bytes())
    chan = WarmChannel(WarmTransport(socket_path(load_hosts()["box"])), timeout=30)
    command = (
        f"exec {sys.executable} {newer} serve --agent-dir {warm.home.agent_dir} --heartbeat 5 --sessions"
    )
    chan.join_serve(command, 5)
    chan.settimeout(30)
    assert b'"gpudeck":"agent"' in chan.makefile("rb").readline()
    wait_for(lambda: not alive(old), timeout=30, what="the old agent's serve to end")
    assert [p for p in shared_serves(warm) if str(newer).encode() in Path(f"/proc/{p}/cmdline").read_bytes()]
    chan.close()


@pytest.mark.slow  # 20 MB of output over SSH
def test_a_follower_that_stops_reading_holds_up_no_other_command(warm: Warm) -> None:  # noqa: F811
    """`logs -f | less`, paused: its session queues and is paused at serve (warm_outbox.py), and a
    listing through the same serve still answers."""
    code = "import sys\nline = 'x' * 99 + '\\n'\nfor i in range(200000):\n    sys.stdout.write(line)\n"
    job = json.loads(ok("run", "--host", "box", "--json", "--", sys.executable, "-c", code).stdout)["id"]
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: "exited" in ok("ps", "--all").stdout, timeout=120, what="the job's end")
        assert follower.poll() is None  # still stuck on its full stdout, far from the end
        listed = json.loads(ok("ps", "--all", "--json").stdout)
        assert [j["state"] for j in listed] == ["exited"]
    finally:
        follower.kill()
        follower.wait(timeout=30)


@pytest.mark.slow  # several CLI runs over SSH
def test_an_agent_gone_under_its_serve_is_deployed_again_without_a_word(warm: Warm) -> None:  # noqa: F811
    """The zipapp removed from the host and its serve gone: the next command's shared serve cannot
    start; the master says so, the remembered agent is forgotten, and the command deploys anew."""
    ok("ps")
    (first,) = shared_serves(warm)
    (pyz,) = (warm.home.agent_dir / "agents").glob("*.pyz")
    pyz.unlink()
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not alive(first), timeout=30, what="the serve's death")
    done = ok("ps")
    assert done.stderr == ""
    assert pyz.exists()  # uploaded again
    assert warm.connections == 1
