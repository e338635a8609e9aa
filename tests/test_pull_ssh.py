"""`gpudeck pull` over the real sshd: a job's directory after it ended, again with nothing to send,
an edited file sent again, and `--node` choosing which host's working directory."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome, free_port


def _pull_json(*args: str, cwd: Path) -> dict:
    out = gpudeck("pull", "--json", *args, cwd=cwd, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow  # a deploy over SSH and a dozen CLI runs: ~8 s
def test_pull_over_ssh_after_the_job_ended_then_only_what_changed(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    out = f"out-{secrets.token_hex(4)}"  # the remote login dir is the sshd's, shared by tests
    make = f"mkdir -p {out}/sub && seq 50000 > {out}/log.txt && head -c 200000 /dev/urandom > {out}/sub/w.bin && ln -s log.txt {out}/latest"
    job = gpudeck("run", "--host", "box", "--", "sh", "-c", make, cwd=tmp_path, timeout=120).stdout.strip()
    assert gpudeck("logs", "-f", job, cwd=tmp_path, timeout=120).returncode == 0  # it ended
    remote = ssh_home.server.remote_home / out
    try:
        first = _pull_json(job, out, "got", cwd=tmp_path)
        assert (first["host"], first["type"]) == ("box", "directory")
        assert sorted(c["path"] for c in first["copied"]) == [f"{out}/log.txt", f"{out}/sub/w.bin"]
        assert first["wire_bytes"] < 200000 + (remote / "log.txt").stat().st_size  # the log compressed
        local = tmp_path / "got" / out
        for name in ("log.txt", "sub/w.bin"):
            assert (local / name).read_bytes() == (remote / name).read_bytes()
            assert (local / name).stat().st_mtime_ns == (remote / name).stat().st_mtime_ns
        assert os.readlink(local / "latest") == "log.txt"

        again = _pull_json(job, out, "got", cwd=tmp_path)
        assert again["copied"] == [] and again["links"] == [] and again["unchanged"] == 2

        (remote / "log.txt").write_text("edited\n")
        edited = _pull_json(job, out, "got", cwd=tmp_path)
        assert [c["path"] for c in edited["copied"]] == [f"{out}/log.txt"]
        assert (local / "log.txt").read_text() == "edited\n"

        escape = gpudeck("pull", job, f"{out}/../..", cwd=tmp_path)
        assert escape.returncode == 2 and len(escape.stderr.splitlines()) == 1
    finally:
        for path in sorted(remote.rglob("*"), reverse=True) if remote.exists() else ():
            path.unlink() if path.is_symlink() or path.is_file() else path.rmdir()
        remote.rmdir() if remote.exists() else None


@pytest.mark.slow  # a two-node job across local and the sshd: ~6 s
def test_node_picks_the_working_directory_of_that_nodes_host(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    name = f"rank-{secrets.token_hex(4)}.txt"
    job = gpudeck(
        "run",
        "--nodes",
        "2",
        "--host",
        "local,box",
        "--launcher",
        "none",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        "--",
        "sh",
        "-c",
        f'echo "node $GPUDECK_NODE" > {name}',
        cwd=tmp_path,
        timeout=120,
    )
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    remote = ssh_home.server.remote_home / name
    try:
        assert gpudeck("logs", "-f", job_id, "--node", "1", cwd=tmp_path, timeout=120).returncode == 0
        assert gpudeck("logs", "-f", job_id, cwd=tmp_path, timeout=120).returncode == 0
        one = _pull_json("--node", "1", job_id, name, "n1", cwd=tmp_path)
        assert one["host"] == "box" and (tmp_path / "n1" / name).read_text() == "node 1\n"
        zero = _pull_json(job_id, name, "n0", cwd=tmp_path)
        assert zero["host"] == "local" and (tmp_path / "n0" / name).read_text() == "node 0\n"
    finally:
        remote.unlink(missing_ok=True)
