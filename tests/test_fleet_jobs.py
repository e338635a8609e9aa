"""Jobs in the fleet model: journal records, seq idempotence, multi-node merge, state, ETA."""

from __future__ import annotations

import math

import pytest

from tui.fleet import Fleet

JOB = "20261129-213344-a3f9c2"


class Journal:
    """Builds records the way a supervisor numbers them: seq from 1, gap-free, per (job, node)."""

    def __init__(self, t0: float = 1000.0) -> None:
        self.seq, self.t = 0, t0

    def rec(self, kind: str, dt: float = 1.0, **fields) -> dict:
        self.seq += 1
        self.t += dt
        return {"seq": self.seq, "t": self.t, "kind": kind, **fields}

    def metric(self, dt: float = 1.0, **values) -> dict:
        return self.rec("metric", dt, values=values)


def started(fleet: Fleet, node: str = "0", host: str = "local") -> Journal:
    j = Journal()
    fleet.apply_events(
        host, JOB, node, [j.rec("state", state="starting"), j.rec("state", state="running", pid=42)]
    )
    return j


def test_state_transitions_from_records():
    f = Fleet(clock=lambda: 0.0)
    j = Journal()
    assert f.apply_events("local", JOB, "0", [j.rec("state", state="starting", supervisor_pid=7)]) >= {
        "job",
        "state",
    }
    job = f.jobs[JOB]
    assert job.state == "starting" and job.started_at == 1001.0
    f.apply_events("local", JOB, "0", [j.rec("state", state="running", pid=42)])
    assert job.state == "running" and job.nodes["0"].pid == 42 and job.active
    changes = f.apply_events(
        "local",
        JOB,
        "0",
        [j.rec("state", state="failed", exit_code=1, cause="CUDA out of memory", tail=["a", "b"])],
    )
    assert "state" in changes
    assert job.state == "failed" and job.exit_code == 1 and job.cause == "CUDA out of memory"
    assert job.tail == ["a", "b"] and job.ended_at == 1003.0 and not job.active
    assert job.runtime(now=99_999.0) == 2.0  # an ended job's runtime stops at ended_at


def test_seq_idempotence_and_resume_point():
    f = Fleet()
    j = started(f)
    batch = [j.metric(step=1, loss=2.0), j.metric(step=2, loss=1.5)]
    assert "series" in f.apply_events("local", JOB, "0", batch)
    assert f.last_seq(JOB, "0") == 4
    assert f.apply_events("local", JOB, "0", batch) == set()  # the same batch again: nothing
    assert f.apply_events("local", JOB, "0", batch[:1]) == set()
    assert f.jobs[JOB].series["loss"].points() == [(1.0, 2.0), (2.0, 1.5)]
    # Out of order inside a batch is put right; what is below last_seq never applies.
    c, b = j.metric(step=4, loss=1.0), j.metric(step=3, loss=1.2)
    c["seq"], b["seq"] = 6, 5
    f.apply_events("local", JOB, "0", [c, b])
    assert f.jobs[JOB].series["loss"].points()[-2:] == [(3.0, 1.2), (4.0, 1.0)]
    assert f.last_seq(JOB, "0") == 6 and f.last_seq(JOB, "nope") == 0 and f.last_seq("x", "0") == 0


def test_multi_node_series_merge_one_point_per_step_latest_wins():
    f = Fleet()
    j0 = started(f, "0", "gpu-a")
    j1 = started(f, "1", "gpu-b")
    f.apply_events("gpu-a", JOB, "0", [j0.metric(step=1, loss=3.0), j0.metric(step=2, loss=2.0)])
    f.apply_events("gpu-b", JOB, "1", [j1.metric(step=2, loss=2.2), j1.metric(step=3, loss=1.9)])
    job = f.jobs[JOB]
    assert job.series["loss"].points() == [(1.0, 3.0), (2.0, 2.2), (3.0, 1.9)]
    assert job.hosts == ["gpu-a", "gpu-b"] and job.step == 3.0
    assert set(job.nodes) == {"0", "1"} and job.nodes["1"].host == "gpu-b"
    # Nodes keep their own seq: node 1 at seq 4 does not hide node 0's seq 3.
    f.apply_events("gpu-a", JOB, "0", [j0.metric(step=4, loss=1.7)])
    assert job.series["loss"].last == (4.0, 1.7)


def test_multi_node_job_state_is_active_while_any_node_is_then_worst():
    f = Fleet()
    j0, j1 = started(f, "0", "a"), started(f, "1", "b")
    f.apply_events("a", JOB, "0", [j0.rec("state", state="exited", exit_code=0)])
    assert f.jobs[JOB].state == "running"
    f.apply_events("b", JOB, "1", [j1.rec("state", state="killed", signal="SIGKILL", dt=5)])
    job = f.jobs[JOB]
    assert job.state == "killed" and job.signal == "SIGKILL" and job.ended_at == j1.t


def test_metric_values_last_and_non_finite():
    f = Fleet()
    j = started(f)
    f.apply_events(
        "local",
        JOB,
        "0",
        [
            j.metric(step=1, loss=1.0, lr=0.1, phase="train"),
            j.metric(step=2, loss="nan", lr=0.1),
            j.metric(step=3, loss="inf"),
            j.metric(step=4, loss=0.5),
        ],
    )
    job = f.jobs[JOB]
    loss = job.series["loss"]
    assert loss.nan_count == 1 and loss.inf_count == 1 and loss.min == 0.5 and loss.max == 1.0
    assert [p for p in loss.downsample(100)] == [(1.0, 1.0), (4.0, 0.5)]
    assert job.last["phase"] == "train" and job.last["loss"] == 0.5 and "phase" not in job.series
    assert "step" not in job.series
    f.apply_events("local", JOB, "0", [j.metric(step=5, loss="-inf")])
    assert job.last["loss"] == -math.inf


def test_axis_time_without_step_and_stepless_val_in_step_series():
    f = Fleet()
    j = started(f)
    f.apply_events(
        "local", JOB, "0", [j.metric(gpu_temp=60.0), j.metric(step=10, loss=1.0), j.metric(val_loss=0.9)]
    )
    job = f.jobs[JOB]
    assert job.axis("gpu_temp") == "time" and job.series["gpu_temp"].points() == [(j.t - 2, 60.0)]
    assert job.axis("loss") == "step"
    # val_loss first came without a step: a time series.
    assert job.axis("val_loss") == "time"
    f.apply_events("local", JOB, "0", [j.metric(step=20, val_acc=0.5), j.metric(val_acc=0.6)])
    # val_acc began with a step; its stepless point lands at the job's latest step (latest wins).
    assert job.series["val_acc"].points() == [(20.0, 0.6)]


def test_eta_and_throughput():
    f = Fleet()
    j = started(f)
    assert f.jobs[JOB].eta_seconds is None
    recs = [
        j.metric(dt=2.0, step=s, total_steps=1000, loss=1.0, samples_per_sec=64.0 + s)
        for s in range(10, 110, 10)
    ]
    f.apply_events("local", JOB, "0", recs)
    job = f.jobs[JOB]
    assert job.steps_per_sec() == pytest.approx(5.0)  # 10 steps every 2 s
    assert job.eta_seconds == pytest.approx((1000 - 100) / 5.0)
    assert job.samples_per_sec == 164.0 and job.total_steps == 1000
    # The rate follows the recent window: a slowdown shows within RATE_WINDOW_S.
    f.apply_events("local", JOB, "0", [j.metric(dt=200.0, step=110), j.metric(dt=100.0, step=120)])
    assert job.steps_per_sec() == pytest.approx(0.1)
    f.apply_events("local", JOB, "0", [j.metric(step=1000)])
    assert job.eta_seconds == 0.0
    f.apply_events("local", JOB, "0", [j.rec("state", state="exited", exit_code=0)])
    assert job.eta_seconds is None


def test_runtime_while_running():
    f = Fleet()
    started(f)
    assert f.jobs[JOB].runtime(now=1012.0) == 11.0  # from the `starting` record at t=1001


def test_gpu_records_build_job_gpu_series():
    f = Fleet()
    j = started(f, host="a")
    g = {
        "uuid": "GPU-1",
        "index": 0,
        "util": 97,
        "mem_used_mib": 30000,
        "mem_total_mib": 81920,
        "temp_c": 70,
        "power_w": 300,
    }
    f.apply_events("a", JOB, "0", [j.rec("gpu", gpus=[g]), j.rec("gpu", gpus=[{**g, "util": 51}])])
    job = f.jobs[JOB]
    assert [y for _, y in job.gpu_util["GPU-1"].points()] == [97.0, 51.0]
    assert job.gpu_mem["GPU-1"].last[1] == 30000.0 and job.gpu_util_now == 51.0
    assert f.job_for_gpu("a", "GPU-1") is job and f.job_for_gpu("b", "GPU-1") is None


def test_events_and_heartbeats():
    f = Fleet()
    j = started(f)
    ch = f.apply_events(
        "local", JOB, "0", [j.rec("event", event="checkpoint_saved", data={"path": "/c"}), j.rec("heartbeat")]
    )
    job = f.jobs[JOB]
    assert ch == {"events", "heartbeat"}
    assert job.events[-1].name == "checkpoint_saved" and job.events[-1].data == {"path": "/c"}
    assert job.nodes["0"].last_heartbeat == j.t


def test_malformed_records_are_skipped_and_counted():
    f = Fleet()
    j = started(f)
    garbage = [
        None,
        42,
        "text",
        [],
        {},
        {"seq": "1", "t": 1.0, "kind": "metric"},
        {"seq": 99, "kind": "metric"},
        {"seq": True, "t": 1.0, "kind": "heartbeat"},
        {"seq": 0, "t": 1.0, "kind": "heartbeat"},
        {"seq": 98, "t": "nan", "kind": "heartbeat"},
    ]
    f.apply_events("local", JOB, "0", garbage)
    assert f.bad_records == len(garbage)
    assert f.last_seq(JOB, "0") == 2  # none of them moved the resume point
    bad_but_numbered = [
        j.rec("metric", values="loss=1"),
        j.rec("state", state="exploded"),
        j.rec("gpu", gpus={"a": 1}),
        j.rec("event"),
        j.rec(None),
    ]
    f.apply_events("local", JOB, "0", bad_but_numbered)
    assert f.bad_records == len(garbage) + 5
    assert f.last_seq(JOB, "0") == j.seq  # consumed: resending would not fix them
    assert f.apply_events("local", JOB, "0", [j.rec("future_kind", x=1)]) == set()
    assert f.bad_records == len(garbage) + 5  # an unknown kind is a newer agent, not garbage
    assert f.apply_events("local", JOB, "0", "not a list") == set()  # type: ignore[arg-type]
    assert f.jobs[JOB].state == "running"
    # Garbage inside a well-formed record: odd values are just not numbers.
    f.apply_events("local", JOB, "0", [j.metric(step={"x": 1}, loss=[1], lr=None, acc=True, k=0.5)])
    assert f.jobs[JOB].axis("k") == "time"  # a step that is not a number is no step
    assert "loss" not in f.jobs[JOB].series and "acc" not in f.jobs[JOB].series


def test_replaying_an_ended_jobs_journal_keeps_the_snapshots_state_and_last_values():
    """A stopped job's journal replayed in pieces (after the agent's job object) never shows it
    running, nor an old loss: the snapshot is newer than every replayed record."""
    f = Fleet(clock=lambda: 0.0)
    j = Journal()
    records = [
        j.rec("state", state="starting"),
        j.rec("state", state="running", pid=42),
        *[j.metric(step=s, loss=1.0 / s) for s in range(1, 6)],
        j.rec("state", state="stopped", exit_code=None, signal="SIGTERM", reason="user"),
    ]
    f.apply_jobs(
        "local",
        [
            {
                "id": JOB,
                "name": "old",
                "node": "0",
                "host": "local",
                "state": "stopped",
                "last_seq": j.seq,
                "last": {"step": 5, "loss": 0.2},
            }
        ],
    )
    job = f.jobs[JOB]
    assert job.state == "stopped" and not job.caught_up
    for cut in range(0, len(records), 2):  # as drains take them: a few at a time
        f.apply_events("local", JOB, "0", records[cut : cut + 2])
        assert job.state == "stopped" and not job.active
        assert job.last["loss"] == 0.2 and job.step == 5
    assert job.caught_up and job.series["loss"].count == 5 and job.nodes["0"].signal == "SIGTERM"
    # A live job's newer records still move it on.
    f.apply_events("local", JOB, "0", [j.rec("state", state="running", pid=43)])
    assert job.state == "running"
