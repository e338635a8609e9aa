"""Hosts, job objects, the fleet header and layering of the fleet model."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tui.fleet import Fleet, util_level


class Clock:
    def __init__(self, t: float = 5000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def gpu(index: int, util, **kw) -> dict:
    return {
        "index": index,
        "uuid": f"GPU-{index}",
        "name": "H100",
        "util": util,
        "mem_used_mib": 1000,
        "mem_total_mib": 80000,
        "temp_c": 50,
        "power_w": 100,
        **kw,
    }


def job_obj(job_id: str, node: str = "0", state: str = "running", **kw) -> dict:
    return {
        "id": job_id,
        "name": "resnet-a",
        "node": node,
        "state": state,
        "exit_code": None,
        "signal": None,
        "started_at": 100.0,
        "ended_at": None,
        "pid": 9,
        "last_seq": 0,
        "last": {},
        **kw,
    }


@pytest.mark.parametrize(
    ("pct", "level"),
    [
        (0, "idle"),
        (9.99, "idle"),
        (10, "moderate"),
        (75, "moderate"),
        (75.01, "busy"),
        (100, "busy"),
        (None, "idle"),
        (float("nan"), "idle"),
    ],
)
def test_util_level_thresholds(pct, level):
    assert util_level(pct) == level


def test_host_status_reason_since_and_staleness():
    clock = Clock()
    f = Fleet(clock=clock)
    assert f.set_host_status("a", "connected") == {"hosts"}
    h = f.hosts["a"]
    assert h.up and h.since == 5000.0 and h.staleness(6000.0) is None
    f.apply_gpus("a", {"available": True, "gpus": [gpu(0, 50)]})
    assert h.last_update == 5000.0 and h.staleness(5012.5) == 12.5
    clock.t = 5100.0
    f.set_host_status("a", "reconnecting", "connection reset")
    clock.t = 5200.0
    assert f.set_host_status("a", "reconnecting", "connection reset") == set()
    assert (h.status, h.reason, h.since) == (
        "reconnecting",
        "connection reset",
        5100.0,
    )  # since the first failure
    f.set_host_status("a", "unreachable", "no route to host", t=5300.0)
    assert not h.up and h.reason == "no route to host" and h.since == 5300.0
    assert h.staleness(5300.0) == 300.0  # its data is shown, marked five minutes old
    with pytest.raises(ValueError):
        f.set_host_status("a", "sleeping")  # type: ignore[arg-type]


def test_gpu_sample_parsing_and_sparklines():
    f = Fleet(clock=Clock())
    sample = {
        "available": True,
        "reason": None,
        "cpu": {"util": 12.5, "load": [0.1, 0.2, 0.3], "count": 8},
        "ram": {"used_mib": 1, "total_mib": 2},
        "gpus": [
            gpu(0, 97, processes=[{"pid": 1, "user": "u", "mem_mib": 500}, {"pid": "x"}]),
            gpu(1, "N/A", temp_c=None, power_limit_w=350),
        ],
    }
    for t in range(100):
        f.apply_gpus("a", sample, t=float(t))
    h = f.hosts["a"]
    g0, g1 = h.gpus
    assert (g0.util, g0.temp_c, g0.level, g0.mem_pct) == (97.0, 50.0, "busy", 1.25)
    assert [(p.pid, p.user, p.mem_mib) for p in g0.processes] == [(1, "u", 500.0)]
    assert g1.util is None and g1.temp_c is None and g1.power_limit_w == 350.0  # N/A stays N/A
    assert len(h.util_series[0]) == 100 and 1 not in h.util_series
    assert h.cpu_series.last == (99.0, 12.5)
    for t in range(100, 20_000):
        f.apply_gpus("a", sample, t=float(t))
    assert len(h.util_series[0]) <= h.util_series[0].capacity
    assert len(h.util_series[0].downsample(30)) <= 30


def test_no_gpu_host_reports_reason_and_cpu():
    f = Fleet(clock=Clock())
    f.apply_hello(
        "laptop",
        {
            "hostname": "laptop",
            "cpu_count": 8,
            "time": 5003.5,
            "gpu": {"available": False, "reason": "no NVIDIA GPU: NVML not found"},
        },
    )
    h = f.hosts["laptop"]
    assert h.gpu_available is False and h.no_gpu_reason == "no NVIDIA GPU: NVML not found"
    assert h.hello["cpu_count"] == 8 and h.clock_offset == 3.5  # the host's clock runs 3.5 s ahead
    f.apply_gpus(
        "laptop",
        {
            "available": False,
            "reason": "no NVIDIA GPU: NVML not found",
            "gpus": [],
            "cpu": 33.0,
            "ram": {"used_mib": 100},
        },
        t=1.0,
    )
    assert h.gpus == [] and h.no_gpu_reason.startswith("no NVIDIA GPU") and h.cpu_series.last == (1.0, 33.0)
    assert f.summary().gpus_total == 0


def test_summary_numbers():
    f = Fleet(clock=Clock())
    f.set_host_status("a", "connected")
    f.set_host_status("b", "connected")
    f.set_host_status("c", "unreachable", "timeout")
    f.apply_gpus("a", {"gpus": [gpu(0, 0), gpu(1, 9), gpu(2, 10), gpu(3, 80)]})
    f.apply_gpus("b", {"gpus": [gpu(0, 100), gpu(1, 50)]})
    f.apply_gpus("c", {"gpus": [gpu(0, 100)]})  # stale data of an unreachable host: not counted busy
    f.apply_jobs("a", [job_obj("20261129-000001-aaaaaa"), job_obj("20261129-000002-bbbbbb", state="exited")])
    s = f.summary()
    assert (s.hosts_up, s.hosts_total) == (2, 3)
    assert (s.gpus_busy, s.gpus_total) == (4, 7)
    assert s.gpus_by_level == {"idle": 2, "moderate": 2, "busy": 2}
    assert (s.jobs_running, s.jobs_total) == (1, 2)


def test_apply_jobs_merges_nodes_across_hosts_by_id():
    f = Fleet(clock=Clock())
    jid = "20261129-213344-a3f9c2"
    assert f.apply_jobs("a", [job_obj(jid, "0", last_seq=5, last={"loss": 1.5, "step": 7})]) >= {
        "job",
        "state",
    }
    f.apply_jobs("b", [job_obj(jid, "1", started_at=101.0)])
    job = f.jobs[jid]
    assert job.name == "resnet-a" and job.hosts == ["a", "b"] and job.state == "running"
    assert job.started_at == 100.0 and job.last == {"loss": 1.5, "step": 7.0} and job.step == 7.0
    # The snapshot's last_seq is the agent's, not ours: tail must still resume from 0.
    assert f.last_seq(jid, "0") == 0 and job.nodes["0"].remote_last_seq == 5
    assert f.apply_jobs("a", [job_obj(jid, "0", last_seq=5, last={"loss": 1.5, "step": 7})]) == set()
    f.apply_jobs("a", [job_obj(jid, "0", state="failed", exit_code=1, ended_at=200.0, cause="NCCL timeout")])
    assert job.state == "running"  # node 1 still runs
    f.apply_jobs("b", [job_obj(jid, "1", state="lost")])
    # A lost node may still run: the job is lost (as `ps` says), and the failure's cause still shows.
    assert job.state == "lost" and job.cause == "NCCL timeout"
    f.apply_jobs("a", [job_obj(jid, "0", state="lost")])  # lost never overrides an ending
    assert job.nodes["0"].state == "failed"


def test_apply_jobs_cli_shape_with_nodes_list():
    f = Fleet(clock=Clock())
    jid = "20261129-213344-a3f9c2"
    obj = {
        "id": jid,
        "name": "big",
        "state": "running",
        "started_at": 50.0,
        "ended_at": None,
        "nodes": [
            {"host": "a", "node": "0", "state": "running", "pid": 1},
            {"host": "b", "node": "1", "state": "starting", "pid": None},
        ],
    }
    f.apply_jobs("a", [obj])
    job = f.jobs[jid]
    assert job.hosts == ["a", "b"] and job.nodes["0"].pid == 1 and job.started_at == 50.0


def test_snapshot_older_than_journal_does_not_roll_state_back():
    f = Fleet(clock=Clock())
    jid = "20261129-213344-a3f9c2"
    f.apply_events(
        "a",
        jid,
        "0",
        [
            {"seq": 1, "t": 1.0, "kind": "state", "state": "running"},
            {"seq": 2, "t": 2.0, "kind": "state", "state": "stopped", "reason": "user"},
        ],
    )
    f.apply_jobs("a", [job_obj(jid, "0", state="running", last_seq=1)])
    assert f.jobs[jid].state == "stopped" and f.jobs[jid].nodes["0"].reason == "user"
    f.apply_jobs("a", [job_obj(jid, "0", state="lost", last_seq=2)])
    assert f.jobs[jid].state == "stopped"
    f.apply_events("a", jid, "1", [{"seq": 1, "t": 1.0, "kind": "state", "state": "running"}])
    f.apply_jobs("a", [job_obj(jid, "1", state="lost", last_seq=1)])  # supervisor died: derived by the agent
    assert f.jobs[jid].nodes["1"].state == "lost" and f.jobs[jid].state == "lost"


def test_jobs_sorted_running_first_then_newest():
    f = Fleet(clock=Clock())
    f.apply_jobs(
        "a",
        [
            job_obj("20261129-000001-aaaaaa", state="exited", started_at=1.0),
            job_obj("20261129-000002-bbbbbb", state="running", started_at=2.0),
            job_obj("20261129-000003-cccccc", state="failed", started_at=3.0),
            job_obj("20261129-000004-dddddd", state="starting", started_at=4.0),
        ],
    )
    assert [j.id[-6:] for j in f.jobs_sorted()] == ["dddddd", "bbbbbb", "cccccc", "aaaaaa"]
    assert len(f.find_job("resnet-a")) == 4 and f.find_job("20261129-000002-bbbbbb")[0].state == "running"


def test_malformed_objects_are_skipped_and_counted():
    f = Fleet(clock=Clock())
    f.apply_jobs("a", [None, {"name": "no id"}, {"id": 5}, job_obj("20261129-000001-aaaaaa", state="weird")])
    assert f.bad_records == 3 and f.jobs["20261129-000001-aaaaaa"].state == "starting"
    f.apply_jobs("a", "garbage")  # type: ignore[arg-type]
    f.apply_hello("a", None)  # type: ignore[arg-type]
    f.apply_gpus("a", ["x"])  # type: ignore[arg-type]
    f.apply_gpus("a", {"gpus": [None, "x", {"index": "zero", "util": "high"}]})
    assert f.bad_records == 6
    assert [(g.index, g.util) for g in f.hosts["a"].gpus] == [(2, None)]


def test_fleet_model_imports_no_textual_and_no_io_layers():
    code = "import sys, json, tui.fleet; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    mods = set(json.loads(out))
    assert not {m for m in mods if m.split(".")[0] in {"textual", "rich", "paramiko", "sqlite3", "socket"}}
    # pure functions the model shares with the CLI: the one sanitiser, the one exactly-once rule
    shared = {"tui.printable", "tui.exactly_once"}
    assert not {m for m in mods if m.startswith("tui.") and not m.startswith("tui.fleet") and m not in shared}


def test_a_fresh_connection_draws_the_hosts_gpu_history_first():
    from tui.fleet import Fleet

    now = [1000.0]
    fleet = Fleet(clock=lambda: now[0])
    fleet.apply_hello(
        "gpu1", {"time": 1010.0, "gpu": {"available": True, "gpus": []}}
    )  # host clock 10 s ahead
    history = [{"t": 950.0 + i, "gpus": [{"index": 0, "util": 50 + i}]} for i in range(5)] + [{"t": "bad"}]
    sample = {"available": True, "gpus": [{"index": 0, "uuid": "GPU-a", "util": 99}], "history": history}
    fleet.apply_gpus("gpu1", sample)
    series = fleet.hosts["gpu1"].util_series[0]
    assert series.points()[:5] == [(940.0 + i, 50.0 + i) for i in range(5)]  # shifted onto our clock
    assert series.last == (1000.0, 99.0)
    now[0] = 1001.0
    fleet.apply_gpus("gpu1", sample)  # a history seen again (reconnect) is not drawn twice
    assert len(series) == 7 and series.last == (1001.0, 99.0)


def test_an_ended_jobs_unchanged_object_is_not_merged_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every jobs poll lists every ended job: an object as the last poll gave it is skipped at once
    (issue 17: idle cost with 500 ended jobs); a changed one, or a running job's, is merged."""
    from tui.fleet.jobs import JobModel

    merged: list[str] = []
    real = JobModel.apply_object

    def counting(self: JobModel, obj: dict, host: str) -> set[str]:
        merged.append(obj["id"])
        return real(self, obj, host)

    monkeypatch.setattr(JobModel, "apply_object", counting)
    fleet = Fleet()
    ended = {"id": "20261201-000000-e00001", "node": "0", "state": "exited", "exit_code": 0, "last_seq": 5}
    running = {"id": "20261201-000000-a00001", "node": "0", "state": "running", "last_seq": 5}
    for _ in range(3):
        fleet.apply_jobs("h", [dict(ended), dict(running)])
    assert merged.count(ended["id"]) == 1 and merged.count(running["id"]) == 3
    fleet.apply_jobs("h", [dict(ended, name="renamed")])
    assert merged.count(ended["id"]) == 2 and fleet.jobs[ended["id"]].name == "renamed"


def test_a_nodes_snapshot_at_the_seq_already_read_does_not_roll_the_jobs_last_values_back():
    # Two nodes: node 1's journal brought step 2 after node 0's step 1. Node 0's snapshot at the seq
    # already read says nothing new: the job keeps node 1's newer values.
    job = "20261201-000000-abcdef"
    fleet = Fleet(clock=lambda: 2000.0)
    fleet.apply_events(
        "h", job, "0", [{"seq": 1, "t": 1001.0, "kind": "metric", "values": {"step": 1, "loss": 0.9}}]
    )
    fleet.apply_events(
        "h", job, "1", [{"seq": 1, "t": 1002.0, "kind": "metric", "values": {"step": 2, "loss": 0.5}}]
    )
    fleet.apply_jobs(
        "h",
        [
            {
                "id": job,
                "node": "0",
                "state": "running",
                "started_at": 1000.0,
                "last": {"step": 1, "loss": 0.9},
                "last_seq": 1,
            }
        ],
    )
    assert fleet.jobs[job].last == {"step": 2.0, "loss": 0.5}
