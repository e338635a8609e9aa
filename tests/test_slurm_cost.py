"""Cost on a Slurm host (issue 30): a per-GPU-hour rate (`hosts set NAME price_per_gpu_hour=…`) gives
each node's spec its own price (rate × its GPUs), so the node's supervisor stops the job at its budget,
and `gpudeck cost` bills the job's running time at that price, not the login node's uptime."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import Sshd
from tests.test_slurm_hosts import cluster_host, ended, launch  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow  # a real cluster behind a login over SSH


@pytest.fixture(scope="session")
def sshd(slurm_login: Sshd) -> Sshd:
    return slurm_login


def test_a_gpu_hour_rate_bills_the_allocation_and_its_budget_stops_it(
    cluster_host: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    rate = 360.0  # per GPU-hour: a node's 2 GPUs cost 0.2 a second
    priced = gpudeck("hosts", "set", "cl", f"price_per_gpu_hour={rate:g}", cwd=tmp_path)
    assert priced.returncode == 0, priced.stderr
    job_id = launch(tmp_path, "--gpus-per-node", "2", "--budget", "1", "--grace", "2", "--", "sleep", "600")
    job = ended(job_id, tmp_path)
    assert job["state"] == "stopped" and (job.get("reason") or "").startswith("budget:"), job
    shown = json.loads(gpudeck("inspect", "--json", job_id, cwd=tmp_path).stdout)
    report = gpudeck("cost", "--json", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    costs = json.loads(report.stdout)
    billed = next(j for j in costs["jobs"] if j["id"] == job_id)
    ran = shown["ended_at"] - shown["started_at"]  # the allocation's running time (never its pending)
    assert billed["accrued"]["USD"] == pytest.approx(2 * rate / 3600 * ran, rel=0.05), (billed, ran)
    assert 0 < billed["accrued"]["USD"] <= 1.0  # stopped at its budget
    cluster = next(h for h in costs["hosts"] if h["name"] == "cl")
    assert cluster["accrued"] is None  # the login node's uptime is not billed
