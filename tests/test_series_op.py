"""The agent's `series` op: a journal downsampled on the host (remote_agent/serving/seriesfold.py)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from remote_agent.serving.seriesfold import CACHE_NAME, envelope, series
from remote_agent.storage.journal import JournalWriter
from tests.support.long_job import write_ended_job
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient, AgentError

JOB = "20261201-000000-5e1e5e"


def test_a_spike_survives_the_downsampling_and_x_is_the_step(agent_dir: Path) -> None:
    d = write_ended_job(agent_dir, JOB, "long", 30_000, spike_at=12_345)
    answer, skipped = series(d, 100)
    loss = answer["metrics"]["loss"]
    assert skipped == 0 and loss["axis"] == "step" and answer["last_seq"] == 30_003
    assert 2 < len(loss["points"]) <= 100
    assert [12_345, 50.0] in loss["points"]  # the one spike among 30,000 points is kept
    assert loss["points"][0] == [1, 1.0] and loss["points"][-1][0] > 29_000
    assert answer["step_time"] and all(len(p) == 2 for p in answer["step_time"])


def test_records_of_every_kind_fold_like_the_clients_model(tmp_path: Path) -> None:
    journal = JournalWriter(tmp_path / "events.jsonl")
    journal.append("state", state="running", pid=2)
    journal.append("metric", values={"step": 1, "loss": 2.0})
    journal.append("metric", values={"val_loss": 1.5})  # a stepless first point: a time series
    journal.append("metric", values={"lr": 0.2})
    journal.append("metric", values={"step": 2, "loss": "nan", "grad": 0.1})  # nan is not drawn
    journal.append("metric", values={"grad": 0.3})  # stepless in a step series: at the latest step
    journal.append(
        "gpu", gpus=[{"index": 0, "uuid": "GPU-1", "util": 97, "mem_used_mib": 1000}, {"index": 1, "util": 3}]
    )
    journal.append("event", event="resized", data={"step": 2, "from": 1, "to": 2})
    journal.close()
    with open(tmp_path / "events.jsonl", "a") as f:
        f.write("not json\n")
        f.write('{"seq":99,"t":"soon","kind":"metric","values":{"step":3,"loss":1.0}}\n')  # no time: skipped
    answer, skipped = series(tmp_path, 50)
    m = answer["metrics"]
    assert skipped == 2
    assert m["loss"] == {"axis": "step", "points": [[1, 2.0]]}
    assert m["val_loss"]["axis"] == m["lr"]["axis"] == "time" and m["val_loss"]["points"][0][1] == 1.5
    assert m["grad"] == {"axis": "step", "points": [[2, 0.1], [2, 0.3]]}
    assert answer["gpus"]["GPU-1"]["util"][0][1] == 97 and answer["gpus"]["GPU-1"]["mem"][0][1] == 1000
    assert answer["gpus"]["index:1"]["index"] == 1
    assert [e["event"] for e in answer["events"]] == ["resized"]


def test_the_fold_is_cached_and_goes_on_from_where_it_was(tmp_path: Path) -> None:
    journal = JournalWriter(tmp_path / "events.jsonl")
    journal.append_many([("metric", {"values": {"step": i, "loss": 1.0 / i}}) for i in range(1, 101)])
    first, _ = series(tmp_path, 1000)
    cache = tmp_path / CACHE_NAME
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o600
    assert json.loads(cache.read_text())["last_seq"] == 100
    journal.append_many([("metric", {"values": {"step": i, "loss": 1.0 / i}}) for i in range(101, 151)])
    journal.close()
    second, _ = series(tmp_path, 1000)
    assert second["last_seq"] == 150 and second["metrics"]["loss"]["points"][-1] == [150, 1.0 / 150]
    assert len(second["metrics"]["loss"]["points"]) == 150
    cache.write_text("{broken")  # a cache that does not fit is folded again, never trusted
    assert series(tmp_path, 1000)[0] == second


def test_envelope_keeps_order_min_and_max() -> None:
    pts = [[i, float(i % 7)] for i in range(100)]
    out = envelope(pts, 10)
    assert len(out) <= 10 and out == sorted(out) and {p[1] for p in out} == {0.0, 6.0}


def test_the_op_answers_and_refuses_a_bad_width(client: AgentClient, agent_dir: Path) -> None:
    write_ended_job(agent_dir, JOB, "long", 3000)
    answer = client.request("series", job=JOB, node="0", width=64)
    assert set(answer) == {"last_seq", "width", "metrics", "step_time", "gpus", "events"}
    assert len(answer["metrics"]["loss"]["points"]) <= 64
    with pytest.raises(AgentError, match="width: expected an integer from 16 to 4000"):
        client.request("series", job=JOB, node="0", width=3)


def test_jobs_with_warm_series_folds_every_job_ahead(client: AgentClient, agent_dir: Path) -> None:
    d = write_ended_job(
        agent_dir, JOB, "long", 30_000
    )  # over WARM_FROM (dense lines: ~15 B a point); a small one folds on request
    small = write_ended_job(agent_dir, "20261201-000000-5a11e0", "short", 10)
    client.request("jobs")
    assert not (d / CACHE_NAME).exists()  # a plain listing (the CLI's `ps`) folds nothing more
    client.request("jobs", warm_series=True)
    wait_for(lambda: (d / CACHE_NAME).exists(), what="the series fold cached")
    assert json.loads((d / CACHE_NAME).read_text())["last_seq"] == 30_003
    assert not (small / CACHE_NAME).exists()
