"""Issue 31, the queue: `run --pool P --gpus N --queue` waits when the pool has not the GPUs free,
FIFO within a priority, shown with its position and reason, cancellable, kept across controller
restarts, and started by the controller (`policy run`) once GPUs free. Real agents, real jobs; only
the GPUs are fake."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remote_agent.spec import GpuRequest, Stall
from tests.conftest import gpudeck
from tests.support.waiting import wait_for
from tui.actions.options import LaunchOptions
from tui.queue.entries import Queue, QueueEntry
from tui.queue.start import fit, positions
from tui.sync.options import SyncOptions

FAKES = Path(__file__).parent / "fakes" / "nvml"


def opts(**kw: object) -> LaunchOptions:
    base: dict = {"argv": ("python", "t.py"), "host": "a", "pool": ("a", "b"), "gpus": GpuRequest(1)}
    return LaunchOptions(**{**base, **kw})


def test_a_queued_job_keeps_every_option_it_was_given(tmp_path: Path) -> None:
    given = opts(
        env=(("TOKEN", "s3cret"),),
        sync=SyncOptions(directory="/src", include=("data.bin",)),
        gpus=GpuRequest(2, "A100"),
        elastic=(1, 3),
        nodes=2,
        stall=Stall(600.0, "stop"),
        pty=True,
    )
    queue = Queue(tmp_path)
    queue.add("20261205-100000-aaaaaa", given, priority=5)
    [back] = queue.entries()
    assert back.opts == given and back.priority == 5
    assert oct((tmp_path / "20261205-100000-aaaaaa.json").stat().st_mode & 0o777) == "0o600"


def test_higher_priority_first_then_first_come_and_one_claim_wins(tmp_path: Path) -> None:
    queue = Queue(tmp_path)
    first = queue.add("20261205-100000-aaaaaa", opts())
    queue.add("20261205-100000-bbbbbb", opts())
    urgent = queue.add("20261205-100000-cccccc", opts(), priority=1)
    assert [e.id for e in queue.entries()] == [urgent.id, first.id, "20261205-100000-bbbbbb"]
    assert queue.claim(first) and not queue.claim(first)  # two controllers: one start
    assert [e.id for e in queue.entries()] == [urgent.id, "20261205-100000-bbbbbb"]
    queue.release(first)  # a start that could not happen: it waits again, in its place
    assert [e.id for e in queue.entries()][1] == first.id


def test_positions_count_the_jobs_ahead_in_the_same_pool() -> None:
    a = QueueEntry("20261205-100000-aaaaaa", opts(gpus=GpuRequest(2, "A100")), 0, 1.0)
    b = QueueEntry("20261205-100000-bbbbbb", opts(), 0, 2.0)
    other = QueueEntry("20261205-100000-cccccc", opts(pool=("c",)), 0, 3.0)
    got = positions([a, b, other])
    assert got[a.id] == (0, "waiting for 2 A100 GPUs on pool a,b; 0 ahead")
    assert got[b.id] == (1, "waiting for 1 GPU on pool a,b; 1 ahead") and got[other.id][0] == 0


def test_fit_places_each_node_where_its_gpus_are_free() -> None:
    assert fit({"a": 1, "b": 2}, ("a", "b"), 1, 2) == ["b"]
    assert fit({"a": 4}, ("a", "b"), 2, 2) == ["a", "a"]
    assert fit({"a": 1, "b": 1}, ("a", "b"), 1, 2) is None


def test_queue_needs_a_pool_and_gpus(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("run", "--queue", "--gpus", "1", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "--queue: needs --pool" in r.stderr
    r = gpudeck("run", "--priority", "3", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "--priority goes with --queue" in r.stderr


def test_a_job_the_controller_is_launching_stays_in_ps_as_starting(gpudeck_home: Path, workdir: Path) -> None:
    # Between the controller's claim (ID.json → ID.starting) and the launch, the job is in neither
    # the queue nor a host's answer: ps read only the queue's waiting entries, so it vanished.
    queue = Queue()
    entry = queue.add("20261205-100000-aaaaaa", opts(pool=("local",)))
    assert queue.claim(entry)
    [row] = json.loads(gpudeck("ps", "--json", cwd=workdir).stdout)
    assert row["id"] == entry.id and row["state"] == "starting"
    assert "starting" in gpudeck("ps", cwd=workdir).stdout


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKES), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYNVML_FAKE", json.dumps([{"uuid": "GPU-aaaa"}, {"uuid": "GPU-bbbb"}]))


def queue_run(workdir: Path, name: str, *extra: str) -> str:
    r = gpudeck(
        "run", "--pool", "local", "--gpus", "1", "--queue", "--name", name, *extra,
        "--", "sh", "-c", 'echo "gpu=$CUDA_VISIBLE_DEVICES"; exec sleep 300',
        cwd=workdir,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def live(workdir: Path) -> dict[str, dict]:
    return {j["name"]: j for j in json.loads(gpudeck("ps", "--json", cwd=workdir).stdout)}


@pytest.mark.slow  # real jobs and a detached controller
@pytest.mark.timeout(240)
def test_three_one_gpu_jobs_on_two_gpus_run_two_then_one_in_order(
    gpudeck_home: Path, workdir: Path, two_gpus: None
) -> None:
    try:
        a = queue_run(workdir, "qa")  # qa and qb start at once: the GPUs are free
        queue_run(workdir, "qb")
        c = queue_run(workdir, "qc")
        d = queue_run(workdir, "qd")
        jobs = live(workdir)
        assert jobs["qa"]["state"] == "running" and jobs["qb"]["state"] == "running"
        assert (
            jobs["qc"]["state"] == "queued"
            and jobs["qc"]["why"] == "waiting for 1 GPU on pool local; 0 ahead"
        )
        assert (
            jobs["qd"]["ahead"] == 1 and jobs["policy"]["state"] == "running"
        )  # the controller, started for it
        listed = gpudeck("queue", cwd=workdir).stdout
        assert listed.index(c) < listed.index(d)

        assert gpudeck("stop", "qd", cwd=workdir).stdout.strip() == f"{d} removed from the queue"
        assert "qd" not in live(workdir)

        assert gpudeck("kill", a, cwd=workdir).returncode == 0  # GPU 0 frees: qc starts on it
        wait_for(lambda: live(workdir)["qc"]["state"] == "running", timeout=90, interval=1, what="qc started")
        wait_for(lambda: "gpu=0" in gpudeck("logs", c, cwd=workdir).stdout, what="qc on GPU 0")
        records = [json.loads(x) for x in (gpudeck_home / "policy-journal.jsonl").read_text().splitlines()]
        [started] = [r for r in records if r.get("kind") == "queue" and r["outcome"] == "started"]
        assert started["job"]["id"] == c and started["hosts"] == ["local"]
    finally:
        for ref in ("policy", "qa", "qb", "qc"):
            gpudeck("kill", ref, cwd=workdir)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_queued_job_survives_a_controller_restart(
    gpudeck_home: Path, workdir: Path, two_gpus: None
) -> None:
    try:
        queue_run(workdir, "qa", "--priority", "0")
        b = queue_run(workdir, "qb")
        c = queue_run(workdir, "qc")
        assert gpudeck("kill", "policy", cwd=workdir).returncode == 0  # the controller goes
        gpudeck("kill", b, cwd=workdir)
        assert live(workdir)["qc"]["state"] == "queued"  # nobody started it, nothing lost it
        out = gpudeck("policy", "run", "--once", cwd=workdir, timeout=120)
        assert out.returncode == 0 and f"queue  qc ({c})  started on local" in out.stdout, (
            out.stdout + out.stderr
        )
        wait_for(lambda: "gpu=1" in gpudeck("logs", c, cwd=workdir).stdout, what="qc on GPU 1")
    finally:
        for ref in ("policy", "qa", "qb", "qc"):
            gpudeck("kill", ref, cwd=workdir)
