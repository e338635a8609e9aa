"""A job whose every rank prints its loss (issue 32): rank 0's loss stays one series, the other
ranks get their own, and `rank` itself is no curve. The lines are a real torchrun --tee run's
(tests/data/metrics/streams_round4.jsonl), printed by a real job under the real supervisor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from remote_agent.serving.seriesfold import series
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for

CASES = Path(__file__).parent / "data" / "metrics" / "streams_round4.jsonl"


def _tee_lines() -> list[str]:
    first = json.loads(CASES.read_text(encoding="utf-8").splitlines()[0])
    assert first["class"] == "rank" and "--tee 3" in first["source"]
    return first["lines"]


def _values(job: str) -> list[dict]:
    return [o["values"] for o in map(json.loads, ok("metrics", "--json", job).splitlines()) if "values" in o]


@pytest.mark.slow  # ~5 s: a real job under the real supervisor
def test_each_rank_of_a_job_is_its_own_series(gpudeck_home: Path, workdir: Path, agent_dir: Path) -> None:
    # The last line is a message right after a bar: the parser holds it for the bar drawn after it;
    # the output ends first, and the supervisor's end of output still journals it.
    last = ["  3%|3         | 100/3126 [00:21<10:41,  4.72it/s]", "{'loss': 0.6931, 'epoch': 0.03}"]
    (workdir / "out.txt").write_text("\n".join(_tee_lines() + last) + "\n", encoding="utf-8")
    job = ok("run", "--name", "ranks", "--", "cat", "out.txt", cwd=workdir).strip()
    wait_for(lambda: len(_values(job)) == 10, timeout=20, what="the job's 10 points")
    values = _values(job)
    assert values.pop() == {"loss": 0.6931, "epoch": 0.03}
    assert [v["loss"] for v in values if "loss" in v] == [
        4.4626,
        5.7729,
        2.64,
        2.668,
    ]  # rank 0, then the mean
    assert [v["loss/rank1"] for v in values if "loss/rank1" in v] == [7.0832, 3.7727, 0.508]
    assert {v["rank"] for v in values} == {0, 1}
    (directory,) = [p.parent for p in agent_dir.glob(f"jobs/{job}/*/events.jsonl")]
    answer, _ = series(directory, 100)
    assert "rank" not in answer["metrics"]
    assert answer["metrics"]["loss/rank1"]["points"] == [[1, 7.0832], [2, 3.7727], [3, 0.508]]


# A DDP script that prints its loss on every rank and the all-reduced mean on rank 0, and keeps its
# own record of what it printed (each rank's JSON file): what the chart must show, read back.
DDP_SCRIPT = """
import json, os, sys
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
record = {"own": [], "mean": []}
for step in range(1, 4):
    x = torch.randn(8, 4)
    loss = torch.nn.functional.mse_loss(model(x), x.sum(1, keepdim=True))
    opt.zero_grad(); loss.backward(); opt.step()
    own = round(loss.item(), 4)
    record["own"].append(own)
    print(f"step {step} loss {own:.4f}", flush=True)
    total = loss.detach().clone()
    dist.all_reduce(total)
    if rank == 0:
        mean = round(total.item() / dist.get_world_size(), 4)
        record["mean"].append(mean)
        print(f"step {step} mean loss {mean:.4f}", flush=True)
with open(f"record{rank}.json", "w") as f:
    json.dump(record, f)
dist.destroy_process_group()
"""


@pytest.mark.slow  # ~20 s: two torch processes on CPU under torchrun, in a real job
@pytest.mark.timeout(120)
def test_torchrun_tee_tells_the_ranks_apart_in_a_real_job(gpudeck_home: Path, workdir: Path) -> None:
    pytest.importorskip("torch")
    (workdir / "ddp.py").write_text(DDP_SCRIPT, encoding="utf-8")
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", "--tee", "3", "ddp.py"]
    job = ok("run", "--name", "tee", "--launcher", "none", "--", *argv, cwd=workdir).strip()
    wait_for(
        lambda: (workdir / "record1.json").exists() and len(_values(job)) == 9, timeout=90, what="9 points"
    )
    own0, own1 = (json.loads((workdir / f"record{r}.json").read_text()) for r in (0, 1))
    values = _values(job)
    # rank 0 printed its own step 1 before any mean: that one is `loss` (see metrics/README.md)
    assert [v["loss"] for v in values if "loss" in v] == [own0["own"][0], *own0["mean"]]
    assert [v["loss/rank0"] for v in values if "loss/rank0" in v] == own0["own"][1:]
    assert [(v["step"], v["loss/rank1"]) for v in values if "loss/rank1" in v] == list(
        zip((1, 2, 3), own1["own"], strict=True)
    )
