"""`gpudeck dump` over the real sshd (issue 34): a two-node job across `local` and an SSH host is
dumped on every node by one command, each node's stack saved on its own host; `--node 1` asks only
the SSH host's agent, and `--show` reads its saved dump back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome, free_port
from tests.test_dump import FUNCTION, SPINS


@pytest.mark.slow  # a deploy over SSH and a two-node job: seconds
@pytest.mark.timeout(180)
def test_dump_takes_every_nodes_stacks_local_and_over_ssh(ssh_home: SshHome, tmp_path: Path) -> None:
    ssh_home.trust()
    ssh_home.add_host()
    job = gpudeck(
        "run", "--nodes", "2", "--host", "local,box", "--launcher", "none",
        "--master-addr", "127.0.0.1", "--master-port", str(free_port()),
        "--", sys.executable, "-c", SPINS,
        cwd=tmp_path,
        timeout=120,
    )  # fmt: skip
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip()
    try:
        r = gpudeck("dump", job_id, "--json", cwd=tmp_path, timeout=120)
        nodes = json.loads(r.stdout)["nodes"]
        assert r.returncode == 0, r.stderr
        assert [(n["host"], n["node"], n["stacks"]) for n in nodes] == [("local", "0", 1), ("box", "1", 1)]
        for n in nodes:
            assert FUNCTION in n["text"] and f"node {n['node']}," in n["text"]
        saved = Path(nodes[1]["path"])  # in the SSH host's agent dir, beside that node's journal
        assert saved.is_relative_to(ssh_home.agent_dir / "jobs" / job_id / "1") and saved.exists()
        one = gpudeck("dump", job_id, "--node", "1", "--show", cwd=tmp_path, timeout=60)
        assert one.returncode == 0 and one.stdout.startswith(nodes[1]["text"])
        assert f"(saved on box: {nodes[1]['path']})" in one.stdout and "node 0," not in one.stdout
    finally:
        gpudeck("kill", job_id, cwd=tmp_path, timeout=120)
