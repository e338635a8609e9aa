"""A job whose every rank prints its loss (issue 32): rank 0's loss stays one series, the other
ranks get their own, and `rank` itself is no curve. The lines are a real torchrun --tee run's
(tests/data/metrics/streams_round4.jsonl), printed by a real job under the real supervisor."""

from __future__ import annotations

import json
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
