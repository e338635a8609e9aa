"""A `series` answer in the fleet model (tui/fleet/preview.py): what it fills, what it skips."""

from __future__ import annotations

from tui.fleet import Fleet

JOB = "20261201-000000-abcdef"


def ended_fleet(last_seq: int = 100) -> Fleet:
    fleet = Fleet(clock=lambda: 0.0)
    fleet.apply_jobs(
        "h",
        [
            {
                "id": JOB,
                "name": "old",
                "node": "0",
                "state": "exited",
                "exit_code": 0,
                "last_seq": last_seq,
                "last": {"step": 50, "loss": 0.1},
            }
        ],
    )
    return fleet


ANSWER = {
    "last_seq": 100,
    "width": 100,
    "metrics": {
        "loss": {"axis": "step", "points": [[2, 0.5], [1, 2.0], [50, 0.1], ["x", 1], [3]]},
        "tok_s": {"axis": "sideways", "points": [[1, 1]]},
        "lr": "no",
    },
    "step_time": [[1, 10.0], [50, 60.0]],
    "gpus": {
        "GPU-9": {"index": 0, "util": [[10.0, 97]], "mem": [[10.0, 1000]]},
        "index:1": {"index": 1, "util": [[10.0, 5]]},
        "bad": {"index": "zero"},
    },
    "events": [
        {"seq": 7, "t": 30.0, "kind": "event", "event": "resized", "data": {"step": 20, "from": 1, "to": 2}},
        {"t": "never", "event": "x"},
    ],
}


def test_an_answer_fills_the_jobs_series_and_skips_what_is_malformed() -> None:
    fleet = ended_fleet()
    tags = fleet.apply_series("h", JOB, "0", ANSWER)
    job = fleet.jobs[JOB]
    assert tags == {"series", "gpu", "events"}
    assert job.series["loss"].points() == [(1.0, 2.0), (2.0, 0.5), (50.0, 0.1)] and job.axis("loss") == "step"
    assert set(job.series) == {"loss"} and fleet.bad_records == 4  # tok_s's axis, lr, the GPU "bad", an event
    assert job.step_time.points() == [(1.0, 10.0), (50.0, 60.0)]
    assert job.gpu_util["GPU-9"].last == (10.0, 97.0) and job.gpu_mem["GPU-9"].last == (10.0, 1000.0)
    assert job.gpu_util["h:1"].last == (10.0, 5.0) and job.gpu_host["h:1"] == "h"
    assert [e.name for e in job.events] == ["resized"]
    assert fleet.apply_series("h", JOB, "0", "garbage") == set() and fleet.bad_records == 5
    assert fleet.apply_series("h", "20261201-000000-000000", "0", ANSWER) == set()  # an unknown job: nothing


def test_an_ended_jobs_journal_read_after_its_answer_only_moves_its_seq() -> None:
    fleet = ended_fleet()
    fleet.apply_series("h", JOB, "0", ANSWER)
    job = fleet.jobs[JOB]
    before = job.series["loss"].points()
    records = [
        {"seq": i, "t": float(i), "kind": "metric", "values": {"step": i, "loss": 9.0}} for i in range(1, 101)
    ]
    assert fleet.apply_events("h", JOB, "0", records) == set()
    assert job.nodes["0"].last_seq == 100 and job.caught_up and job.series["loss"].points() == before
    job.drop_history()
    assert (
        not job.has_history
        and not job.nodes["0"].previewed
        and job.last["loss"] == 0.1
        and job.state == "exited"
    )
