"""The `resized` record: journaled once by the new job's supervisor before its first step, with
from → to, why and the pause since the old job's last step; read back by `metrics` and the chart."""

from __future__ import annotations

import json
import time
from pathlib import Path

from remote_agent.serving.jobs import last_metric_at
from remote_agent.supervision.resize import ResizeNote
from tui.fleet import JobEvent, JobModel
from tui.format import resized_text
from tui.widgets.charts import resize_marks


def metric(step: int | None) -> tuple[str, dict]:
    return "metric", {"values": {"loss": 1.0, **({"step": step} if step is not None else {})}}


def test_the_record_goes_once_before_the_first_stepped_point() -> None:
    last = time.time() - 12.0
    note = ResizeNote(
        {
            "resized_from": {"job": "J", "nodes": 2, "why": "scale +1", "last_step_at": last},
            "multinode": {"nodes": 3, "nproc_per_node": 2},
        }
    )
    first = [("event", {"event": "resumed", "data": {}}), metric(None), metric(40)]
    out = note.mark(first)
    assert [k for k, _ in out] == ["event", "metric", "event", "metric"]
    kind, body = out[2]
    data = body["data"]
    assert body["event"] == "resized" and (data["from"], data["to"], data["step"], data["job"]) == (
        2,
        3,
        40,
        "J",
    )
    assert data["why"] == "scale +1" and 12.0 <= data["pause_s"] < 60 and data["world_size"] == 6
    assert note.mark([metric(41)]) == [metric(41)]  # once


def test_no_record_for_a_job_that_was_not_resized_and_no_pause_without_a_last_step() -> None:
    assert ResizeNote({"multinode": {"nodes": 2}}).mark([metric(1)]) == [metric(1)]
    out = ResizeNote({"resized_from": {"job": "J", "nodes": "two"}, "multinode": {"nodes": 1}}).mark(
        [metric(5)]
    )
    assert out[0][1]["data"]["pause_s"] is None and out[0][1]["data"]["from"] is None
    assert out[0][1]["data"]["world_size"] is None  # no nproc_per_node: unknown, not guessed


def test_last_metric_at_reads_the_journal_backwards(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    assert last_metric_at(journal) is None
    lines = [
        {"seq": 1, "t": 10.0, "kind": "metric", "values": {"step": 1}},
        {"seq": 2, "t": 11.5, "kind": "metric", "values": {"step": 2}},
        {"seq": 3, "t": 12.0, "kind": "state", "state": "stopped"},
    ]
    journal.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"seq": 4, "kind": "metr')
    assert last_metric_at(journal) == 11.5
    dense = {"seq": 3, "last": 4, "t": 12.5, "kind": "points", "names": ["step"], "rows": [[3], [4]]}
    journal.write_text("".join(json.dumps(x) + "\n" for x in [*lines[:2], dense, lines[2]]))
    assert last_metric_at(journal) == 12.5  # a burst of points is one dense line


def test_metrics_and_the_chart_say_it_in_words() -> None:
    data = {"from": 2, "to": 3, "step": 40, "why": "scale +1", "pause_s": 12.34, "world_size": 6}
    assert resized_text(data) == "resized 2 → 3 nodes (world size 6) at step 40 (scale +1), paused 12.3 s"
    assert resized_text({"from": 2}) == "resized 2 → ? nodes"
    job = JobModel(id="j")
    job.events.append(JobEvent(1.0, "0", "resized", data))
    job.events.append(JobEvent(2.0, "0", "resized", {"step": "x"}))  # malformed: no marker
    job.events.append(JobEvent(3.0, "0", "checkpoint_saved", {"step": 50}))
    assert resize_marks(job) == [(40.0, "2→3")]
