"""A Slurm job is billed on what accounting says (issue 30): sacct's `Elapsed` and the GPUs of its
`AllocTRES` where slurmdbd answers, each node's journal where it does not (no slurmdbd: sacct says
"accounting storage is disabled", the test cluster's case; tests/test_slurm_cost.py bills that way).

The test cluster runs without slurmdbd, so the accounting path fakes only sacct's output at its
boundary: a `sacct` on the login node's PATH that answers in sacct's `-P` form (fields as sacct's
man page documents them: Elapsed `[days-]hours:minutes:seconds`, AllocTRES `billing=…,cpu=…,
gres/gpu=N,mem=…,node=…`) with the job's state as the real `scontrol` tells it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.slurm.queue import parse_elapsed, parse_sacct, tres_gpus
from tests.conftest import gpudeck
from tests.support.slurm import SlurmCluster, login_node
from tests.support.sshd import Sshd
from tests.test_slurm_hosts import cluster_host, ended, launch  # noqa: F401 (fixture)
from tui.cost.runs import fold

RATE = 360.0  # per GPU-hour: 0.1 a GPU-second
ELAPSED = "00:00:02"  # what the fake accounting says every job ran: shorter than its journal's 6 s

SACCT_SAMPLE = (  # `sacct -P -n -X -o JobID,State,ExitCode,NodeList,Elapsed,AllocTRES`
    "4242|COMPLETED|0:0|n[1-2]|1-02:03:04|billing=8,cpu=8,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=2\n"
    "4242.batch|COMPLETED|0:0|n1|1-02:03:04|cpu=4,mem=32G,node=1\n"
    "4243|FAILED|3:0|n3|00:00:07|billing=1,cpu=1,mem=1M,node=1\n"
)


def test_sacct_elapsed_and_alloc_gpus_are_read_from_its_text() -> None:
    jobs = parse_sacct(SACCT_SAMPLE)
    assert (jobs["4242"].elapsed, jobs["4242"].gpus) == (26 * 3600 + 3 * 60 + 4, 4)
    assert (jobs["4243"].elapsed, jobs["4243"].gpus, jobs["4243"].exit_code) == (7, None, 3)
    assert (
        parse_elapsed("05:06") == 306 and parse_elapsed("Unknown") is None and parse_elapsed("1-x:00") is None
    )
    assert tres_gpus("cpu=2,gres/gpu:h100=2") is None  # typed only: the untyped count is the total
    assert parse_sacct("4244|COMPLETED|0:0|n1\n")["4244"].elapsed is None  # an older field list


def _ended_node(slurm: dict) -> dict:
    return {"id": "20261206-000000-aaaaaa", "node": "1", "state": "exited", "slurm": slurm}


def test_an_ended_slurm_node_is_billed_on_accounting_when_it_answers_else_on_its_journal() -> None:
    records = [
        {"seq": 1, "t": 1000.0, "kind": "state", "state": "running"},
        {"seq": 2, "t": 1030.0, "kind": "state", "state": "exited", "exit_code": 0},
    ]
    journal = fold("cl", _ended_node({"gpus_per_node": 2}), records)
    assert journal.until(5000.0) == 1030.0 and journal.units == 2.0
    billed = fold("cl", _ended_node({"gpus_per_node": 2, "elapsed": 600, "node_gpus": 1.5}), records)
    assert billed.until(5000.0) == 1600.0 and billed.units == 1.5
    running = fold("cl", dict(_ended_node({"elapsed": 600}), state="running"), records[:1])
    assert running.until(1010.0) == 1010.0  # Elapsed bills only an ended job


@pytest.fixture(scope="module")
def sshd(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A login node whose `sacct` answers as accounting would (the real one says it is disabled)."""
    root = tmp_path_factory.mktemp("slurm-accounting-login")
    fake = root / "bin"
    fake.mkdir()
    sacct = fake / "sacct"
    sacct.write_text(
        "#!/bin/bash\n"
        "# sacct -P -n -X -j IDS -o FIELDS: each job as the real scontrol knows it\n"
        'while [ $# -gt 0 ]; do case "$1" in -j) ids="$2"; shift;; esac; shift; done\n'
        "for id in ${ids//,/ }; do\n"
        '  line=$(scontrol show job -o "$id" 2>/dev/null) || continue\n'
        '  state=$(sed -n "s/.*JobState=\\([A-Z_]*\\).*/\\1/p" <<<"$line")\n'
        '  code=$(sed -n "s/.* ExitCode=\\([0-9:]*\\).*/\\1/p" <<<"$line")\n'
        '  nodes=$(sed -n "s/.* NodeList=\\([^ ]*\\).*/\\1/p" <<<"$line")\n'
        f'  echo "$id|$state|$code|$nodes|{ELAPSED}|billing=2,cpu=2,gres/gpu=2,mem=1M,node=1"\n'
        "done\n"
    )
    sacct.chmod(0o755)
    root.chmod(0o755)
    server = login_node(
        slurm_cluster, root, PATH=f"{fake}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    )
    yield server
    server.stop()


@pytest.mark.slow  # a real cluster behind a login over SSH
def test_gpudeck_cost_bills_sacct_elapsed_times_the_allocated_gpus(
    cluster_host: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    assert gpudeck("hosts", "set", "cl", f"price_per_gpu_hour={RATE:g}", cwd=tmp_path).returncode == 0
    job_id = launch(tmp_path, "--gpus-per-node", "2", "--", "sleep", "6")
    job = ended(job_id, tmp_path)
    assert job["state"] == "exited" and job["slurm"]["elapsed"] == 2, job
    costs = json.loads(gpudeck("cost", "--json", cwd=tmp_path).stdout)
    billed = next(j for j in costs["jobs"] if j["id"] == job_id)
    assert billed["accrued"]["USD"] == pytest.approx(2 * RATE / 3600 * 2, rel=1e-6), billed
