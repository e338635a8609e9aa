"""Issue 31, one controller: a launch never blocks the pass. While a managed recovery's cloud
instance still boots (a fake launch held on a gate), the same passes start a queued job when its GPU
frees and apply a rule; once the instance answers, the next pass finishes the recovery onto it — one
launch, one token, even across a controller restart mid-launch.

Fakes stand only for the agents and the cloud; the managed pass, the queue's pass, the journal and
the controller are the real ones."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from remote_agent.spec import GpuRequest
from tests.test_managed import Starts
from tests.test_managed_nodes import JOB, RUNNING, TAKEN
from tests.test_managed_nodes import Agents as ManagedAgents
from tests.test_policy_capacity import NOW, FakeObserver
from tui.actions.find import Job
from tui.actions.options import LaunchOptions
from tui.errors import GpudeckError
from tui.managed.candidates import CloudCandidate
from tui.managed.records import Managed, ManagedDir, Policy
from tui.managed.recover import managed_pass
from tui.policy.controller import Controller
from tui.policy.inflight import InFlight, LaunchInFlight
from tui.policy.journal import PolicyJournal
from tui.policy.rules import load
from tui.queue.entries import Queue
from tui.queue.start import start_waiting

CANDIDATE = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:spot:img-1"
RULE = (
    '[pool.gpus]\nhosts = ["alpha"]\n\n[[rule]]\nname = "backlog"\nkind = "metric"\npool = "gpus"\n'
    'metric = "backlog"\nabove = 10000\nadd = 1\nmax = 4\n'
)
QUEUED = "20261205-110000-cccccc"


class Agents(ManagedAgents):
    """The managed chain's hosts, and the queue's host `q1`, whose one GPU is busy until freed."""

    def __init__(self) -> None:
        super().__init__({"a": {"0": RUNNING}, "b": {"1": TAKEN}})
        self.busy = {"q1"}

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if op == "gpus" and host in self.busy:
            return {"gpus": [{"uuid": "GPU-q", "processes": [{"pid": 7}]}]}
        return super().request(host, op, timeout, **args)


class BootingCloud:
    """One instance per token (as ClientToken makes it); a launch returns only once `gate` opens —
    the instance booting and SSH not answering yet."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.made: dict[str, str] = {}
        self.calls: list[str] = []

    def __call__(self, candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        self.calls.append(token)
        host = self.made.setdefault(token, f"i-{len(self.made):04d}")
        if not self.gate.wait(timeout=20):
            raise GpudeckError(f"{host}: SSH did not answer")
        return host


def controller(tmp_path: Path, agents: Any, cloud: BootingCloud, flights: InFlight) -> tuple[Controller, Any]:
    (tmp_path / "policies.toml").write_text(RULE)
    resized: list[int] = []

    def resize(job: Job, count: int, onto: tuple[str, ...], new_id: str = "") -> str:
        resized.append(count)
        return "j-new"

    mdir, queue, starts, queue_starts = (
        ManagedDir(tmp_path / "managed"),
        Queue(tmp_path / "queue"),
        Starts(),
        Starts(),
    )

    def launch(c: CloudCandidate, token: str, like: str | None = None) -> str:
        return flights.call(token, cloud, c, token, like)

    ctl = Controller(
        jobs=lambda: [Job("j1", "yolo", [{"host": "alpha", "state": "running"}])],
        observer=FakeObserver(),  # type: ignore[arg-type]
        policies=load(tmp_path / "policies.toml"),
        journal=PolicyJournal(tmp_path / "journal.jsonl"),
        resize=resize,
        clock=lambda: NOW,
        managed_pass=lambda: managed_pass(agents, None, mdir, start=starts, cloud=launch),
        queue_pass=lambda: start_waiting(agents, None, queue, start=queue_starts),
    )
    return ctl, (mdir, queue, starts, queue_starts, resized)


def setup(tmp_path: Path) -> None:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(argv=("python", "train.py"), host="a", hosts=("a", "b"), nodes=2, name="two")
    mdir.save(Managed(JOB, JOB, "a", opts, Policy(fallback=(CANDIDATE,)), hosts=("a", "b")))
    queued = LaunchOptions(argv=("python", "t.py"), host="q1", pool=("q1",), gpus=GpuRequest(1), name="q")
    Queue(tmp_path / "queue").add(QUEUED, queued)


def outcomes(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(str(r.get("kind") or r.get("rule")), str(r["outcome"])) for r in records]


def test_a_booting_replacement_holds_up_neither_the_queue_nor_the_rules(tmp_path: Path) -> None:
    setup(tmp_path)
    agents, cloud, flights = Agents(), BootingCloud(), InFlight()
    ctl, (mdir, queue, starts, queue_starts, resized) = controller(tmp_path, agents, cloud, flights)
    try:
        first = ctl.tick()  # the launch starts; the rule fires in the same pass
        assert ("managed", "launching") in outcomes(first)
        assert ("metric", "applied") in outcomes(first) and resized == [2]
        assert flights.busy() and not starts.calls  # still booting: nothing relaunched yet

        agents.busy.clear()  # the queue's GPU frees: the next pass starts the queued job
        second = ctl.tick()
        assert ("queue", "started") in outcomes(second)
        assert [job_id for job_id, _ in queue_starts.calls] == [QUEUED] and not queue.entries()
        assert ("managed", "launching") not in outcomes(second)  # said once, not at every pass
        assert flights.busy() and not starts.calls
    finally:
        cloud.gate.set()  # the instance answers
        flights.wait(timeout=30)
    third = ctl.tick()
    assert ("managed", "recovered") in outcomes(third)
    [(new_id, opts)] = starts.calls
    assert opts.hosts == ("a", "i-0000")  # node 1 onto the launched instance
    assert len(cloud.made) == 1 and len(set(cloud.calls)) == 1  # one launch, one token
    assert mdir.all()[0].current == new_id


def test_a_controller_restarted_mid_launch_resumes_the_same_launch(tmp_path: Path) -> None:
    setup(tmp_path)
    agents, cloud = Agents(), BootingCloud()
    killed, _ = controller(tmp_path, agents, cloud, InFlight())
    assert ("managed", "launching") in outcomes(killed.tick())  # then the controller dies
    flights = InFlight()
    restarted, (mdir, _, starts, _, _) = controller(tmp_path, agents, cloud, flights)
    assert ("managed", "launching") in outcomes(restarted.tick())  # asked again, with the same token
    cloud.gate.set()
    flights.wait(timeout=30)
    assert ("managed", "recovered") in outcomes(restarted.tick())
    assert len(set(cloud.calls)) == 1 and len(cloud.made) == 1  # the same instance, never a second
    assert starts.calls[0][1].hosts == ("a", "i-0000")


def test_a_failed_launch_is_raised_at_the_next_pass_as_it_was() -> None:
    flights, gate = InFlight(), threading.Event()

    def boom() -> str:
        gate.wait(timeout=10)
        raise GpudeckError("aliyun RunInstances: OperationDenied.NoStock: no stock")

    try:
        flights.call("t1", boom)
    except LaunchInFlight as flight:
        assert flight.started and flight.token == "t1"
    else:
        raise AssertionError("the pass waited for the launch")
    gate.set()
    flights.wait(timeout=10)
    try:
        flights.call("t1", boom)
    except GpudeckError as exc:
        assert "NoStock" in str(exc)
    else:
        raise AssertionError("the launch's error was not raised")


def test_a_rules_launch_boots_while_the_queue_goes_on_and_the_next_pass_scales_onto_it(
    tmp_path: Path,
) -> None:
    from tests.test_policy_capacity import POOL, FakeCloud
    from tests.test_policy_capacity import RULE as BACKLOG

    class Booting(FakeCloud):
        gate = threading.Event()

        def launch(self, pool: Any, token: str) -> Any:
            assert self.gate.wait(timeout=20), "the instance never answered"
            return super().launch(pool, token)

    (tmp_path / "policies.toml").write_text(POOL + BACKLOG)
    queued = LaunchOptions(argv=("python", "t.py"), host="q1", pool=("q1",), gpus=GpuRequest(1), name="q")
    Queue(tmp_path / "queue").add(QUEUED, queued)
    agents, cloud, flights, starts, resized = Agents(), Booting(), InFlight(), Starts(), []
    agents.busy.clear()

    def resize(job: Job, count: int, onto: tuple[str, ...], new_id: str = "") -> str:
        resized.append((count, onto))
        return "j-new"

    ctl = Controller(
        jobs=lambda: [Job("j1", "yolo", [{"host": "alpha", "state": "running"}])],
        observer=FakeObserver(),  # type: ignore[arg-type]
        policies=load(tmp_path / "policies.toml"),
        journal=PolicyJournal(tmp_path / "journal.jsonl"),
        resize=resize,
        clock=lambda: NOW,
        capacity=cast(Any, cloud),
        flights=flights,
        queue_pass=lambda: start_waiting(cast(Any, agents), None, Queue(tmp_path / "queue"), start=starts),
    )
    try:
        first = outcomes(ctl.tick())
        assert ("metric", "launching") in first and ("queue", "started") in first  # the same pass
        assert not resized and flights.busy()
        assert outcomes(ctl.tick()) == []  # still booting: not launched again, nothing said again
    finally:
        cloud.gate.set()
        flights.wait(timeout=30)
    assert [o for _, o in outcomes(ctl.tick())] == ["launched", "intent", "applied"]
    assert resized == [(2, ("i-new1",))] and len(set(cloud.tokens)) == 1


def test_a_launch_the_rule_stopped_asking_for_joins_the_pool_and_is_used_next(tmp_path: Path) -> None:
    from tests.test_policy_capacity import POOL, FakeCloud
    from tests.test_policy_capacity import RULE as BACKLOG
    from tui.policy.inputs import JobFacts, Point

    class Booting(FakeCloud):
        gate = threading.Event()

        def launch(self, pool: Any, token: str) -> Any:
            assert self.gate.wait(timeout=20), "the instance never answered"
            return super().launch(pool, token)

    class Backlog(FakeObserver):
        value = 12000.0

        def view(self, job: Job, now: float) -> JobFacts:
            return replace(super().view(job, now), metrics={"backlog": [Point(now - 1, self.value)]})

    (tmp_path / "policies.toml").write_text(POOL + BACKLOG)
    cloud, flights, observer, resized = Booting(), InFlight(), Backlog(), []

    def resize(job: Job, count: int, onto: tuple[str, ...], new_id: str = "") -> str:
        resized.append((count, onto))
        return "j-new"

    ctl = Controller(
        jobs=lambda: [Job("j1", "yolo", [{"host": "alpha", "state": "running"}])],
        observer=observer,  # type: ignore[arg-type]
        policies=load(tmp_path / "policies.toml"),
        journal=PolicyJournal(tmp_path / "journal.jsonl"),
        resize=resize,
        clock=lambda: NOW,
        capacity=cast(Any, cloud),
        flights=flights,
    )
    try:
        assert ("metric", "launching") in outcomes(ctl.tick())
        observer.value = 10.0  # the backlog is gone while the instance boots
    finally:
        cloud.gate.set()
        flights.wait(timeout=30)
    [adopted] = ctl.tick()
    assert (adopted["outcome"], adopted["host"]) == ("launched", "i-new1") and "free capacity" in adopted[
        "note"
    ]
    assert ctl.policies.pools["gpus"].hosts == ("alpha", "i-new1") and not resized
    observer.value = 12000.0  # the backlog again: the instance already there is used, none launched
    cloud.free_gpus["i-new1"] = 1
    assert [o for _, o in outcomes(ctl.tick())] == ["intent", "applied"]
    assert resized == [(2, ())] and len(set(cloud.tokens)) == 1
