"""The TUI's cluster panel (issue 30): a Slurm host's panel shows its partitions' GPUs idle,
allocated and down and the user's queue with the reasons jobs wait, polled from the login node."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd
from tests.support.tui import redrawn, sync, until
from tests.test_slurm_hosts import cluster_host, job_of, launch  # noqa: F401 (fixture)
from tui.app import GpuDeckApp

pytestmark = pytest.mark.slow  # a real cluster behind a login over SSH, and the app


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    return slurm_login


@pytest.mark.timeout(180)
@sync
async def test_the_cluster_panel_shows_partitions_and_a_pending_jobs_reason(
    cluster_host: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    job_id = launch(tmp_path, "--nodes", "4", "--launcher", "none", "--", "true")
    app = GpuDeckApp(store=None)
    async with app.run_test(size=(160, 48)) as pilot:

        def waiting() -> bool:
            host = app.fleet.hosts.get("cl")
            queue = (host.slurm or {}).get("queue") if host is not None else None
            return any(j.get("reason") == "PartitionNodeLimit" for j in queue or [])

        await until(pilot, waiting, "the cluster's queue with the pending job's reason", timeout=90)
        await redrawn(pilot, app)
        text = str(app.screen.query_one("#host-cl").render())
        assert "partition gpu* UP: 3 nodes, GPUs 6:" in text, text
        slurm_id = str(job_of(job_id, tmp_path)["slurm"]["job_id"])
        assert f"{slurm_id} PENDING (PartitionNodeLimit)" in text, text
    assert gpudeck("kill", job_id, cwd=tmp_path, timeout=120).returncode == 0  # not left in the queue
