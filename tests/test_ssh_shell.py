"""Issue 35, a shell on the node: `gpudeck ssh JOB [-- CMD]` runs in the job's working directory
with its job variables (never its --env values), over the host's SSH connection; interactive under
a terminal (a PTY), one command otherwise, its exit status passed back. A hostile directory name
stays one word."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome
from tui.commands.shell_on import remote_command


def test_the_remote_line_quotes_every_word() -> None:
    line = remote_command("/w/$(reboot) x", {"GPUDECK_JOB_ID": "j"}, ["echo", "a b", ";rm"])
    assert line == "cd -- '/w/$(reboot) x' || exit 1; export GPUDECK_JOB_ID=j; exec echo 'a b' ';rm'"


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_ssh_runs_in_the_jobs_directory_with_its_variables_not_its_secrets(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    ssh_home.write_ssh_config(f"Host box\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n")
    ssh_home.trust()
    ssh_home.add_host()
    work = tmp_path / "a dir"
    work.mkdir()
    job = gpudeck(
        "run", "--host", "box", "--workdir", str(work), "--env", "TOKEN=s3cret", "--", "sleep", "300",
        cwd=tmp_path,
    ).stdout.strip()  # fmt: skip
    try:
        r = gpudeck(
            "ssh",
            job,
            "--",
            "sh",
            "-c",
            'pwd; echo "id=$GPUDECK_JOB_ID token=${TOKEN:-none}"; exit 3',
            cwd=tmp_path,
        )
        assert r.returncode == 3, r.stderr  # its status, passed back
        # (the test box's .bashrc prints a line first, as real ones do)
        assert r.stdout.splitlines()[-2:] == [str(work), f"id={job} token=none"]

        # interactive: a terminal here, a PTY there
        pid, fd = pty.fork()
        if pid == 0:  # the child: gpudeck ssh with a terminal
            os.chdir(tmp_path)
            os.execv(sys.executable, [sys.executable, "-m", "tui", "ssh", job])
        seen = b""
        deadline = time.monotonic() + 60
        sent = False
        while time.monotonic() < deadline:
            if not sent and seen:  # the remote shell has said something (a prompt): type, as a user
                os.write(fd, b"echo pty=$(tty | cut -c1-8) in=$PWD; exit 7\n")
                sent = True
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
        if not sent:
            os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
        text = seen.decode(errors="replace")
        assert f"pty=/dev/pts in={work}" in text, text
        assert os.waitstatus_to_exitcode(status) == 7
    finally:
        kill_all_jobs(ssh_home.agent_dir)


def test_a_shell_needs_a_terminal_or_a_command(gpudeck_home: Path, workdir: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "tui", "ssh", "local"],
        cwd=workdir,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2 and "no terminal here for a shell" in r.stderr
    r = gpudeck("ssh", "local", "--", "sh", "-c", "exit 4", cwd=workdir)
    assert r.returncode == 4
