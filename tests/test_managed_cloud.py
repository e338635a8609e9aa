"""Issue 31, cloud fallback candidates against fake agents and a fake launcher: a cloud candidate
launches a host when no host before it can take the job, a capacity error moves to the next with
its code, the launch token comes from the journaled chain (a controller killed mid-launch asks for
the same instance again), a lost cloud host cools its candidate, and the provider's word on a host
that stopped answering is a loss at once. The real providers: tests/test_managed_cloud_provider.py."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.test_managed import Starts
from tests.test_managed_nodes import JOB, RUNNING
from tests.test_managed_nodes import Agents as NodeAgents
from tui.actions.options import LaunchOptions
from tui.errors import GpudeckError
from tui.managed.candidates import CloudCandidate, error_code, is_capacity, parse_candidate, parse_fallback
from tui.managed.records import Managed, ManagedDir, Policy
from tui.managed.recover import managed_pass

SPOT = "aws:us-east-1a:g5.xlarge:spot"
ON_DEMAND = "aliyun:cn-hangzhou-i:ecs.gn7i-c8g1.2xlarge:on-demand:img-1"
NO_CAPACITY = "launch: aws us-east-1 RunInstances: InsufficientInstanceCapacity: no g5.xlarge in us-east-1a"


class Cloud:
    """A provider that makes one instance per token (as ClientToken does), or refuses a candidate."""

    def __init__(self, refuse: dict[str, str] | None = None) -> None:
        self.refuse = refuse or {}
        self.calls: list[tuple[str, str]] = []  # (candidate, token)
        self.made: dict[str, str] = {}  # token → host
        self.like: list[str | None] = []  # the lost host each launch replaces

    def __call__(self, candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        self.calls.append((str(candidate), token))
        self.like.append(like)
        if str(candidate) in self.refuse:
            raise GpudeckError(self.refuse[str(candidate)])
        return self.made.setdefault(token, f"i-{len(self.made):04d}")


class Agents(NodeAgents):
    def hosts(self) -> list[str]:
        return ["a", "b"]


def one_node(tmp_path: Path, fallback: tuple[str, ...], **policy: Any) -> ManagedDir:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(argv=("python", "train.py"), host="a", name="one")
    mdir.save(Managed(JOB, JOB, "a", opts, Policy(**{"fallback": fallback, **policy})))
    return mdir


TAKEN_ON_A = {"a": {"0": {"state": "stopped", "reason": "preempted"}}}


def test_candidates_are_read_and_checked_naming_the_field() -> None:
    c = parse_candidate(SPOT)
    assert (c.provider, c.zone, c.region, c.type, c.spot, c.image) == (
        "aws",
        "us-east-1a",
        "us-east-1",
        "g5.xlarge",
        True,
        None,
    )
    ali = parse_candidate(ON_DEMAND)
    assert (ali.region, ali.spot, ali.image) == ("cn-hangzhou", False, "img-1")
    assert parse_fallback(f"a, {SPOT},b", ["a", "b"]) == ("a", SPOT, "b")
    for text, field in [
        ("gcp:us-east1-b:a2:spot", "provider 'gcp'"),
        ("aws:us-east-1a:g5.xlarge:cheap", "market 'cheap'"),
        ("aws:Nowhere:g5.xlarge:spot", "zone 'Nowhere'"),
        ("aws:us-east-1a:g5 xlarge:spot", "type 'g5 xlarge'"),
        ("aws:us-east-1a:spot", "PROVIDER:ZONE:TYPE:MARKET"),
    ]:
        with pytest.raises(ValueError, match=field):
            parse_fallback(text, [])


def test_run_refuses_a_bad_candidate_in_one_line(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("run", "--managed", "--fallback", "aws:us-east-1a:g5.xlarge:cheap", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "market 'cheap' is not one of spot, on-demand" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_capacity_codes_are_told_from_other_errors() -> None:
    assert error_code(NO_CAPACITY) == "InsufficientInstanceCapacity" and is_capacity(
        "InsufficientInstanceCapacity"
    )
    aliyun = "launch: aliyun cn-hangzhou RunInstances: OperationDenied.NoStock: out of stock"
    assert error_code(aliyun) == "OperationDenied.NoStock" and is_capacity("OperationDenied.NoStock")
    assert not is_capacity(error_code("launch: aws us-east-1 RunInstances: UnauthorizedOperation: no"))


def test_a_cloud_candidate_is_launched_when_no_host_before_it_answers(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, ("b", SPOT))
    agents, start, cloud = Agents(TAKEN_ON_A, down={"b"}), Starts(), Cloud()
    records = managed_pass(agents, None, mdir, start=start, cloud=cloud)
    assert [r["outcome"] for r in records] == ["recovering", "recovered"]
    assert cloud.calls == [(SPOT, f"gpudeck-{JOB}-r1-n0-c1")]  # the chain, recovery, node, candidate
    assert cloud.like == ["a"]  # set up as the host it replaces
    [(new_id, opts)] = start.calls
    assert opts.host == "i-0000" and opts.restart_of == JOB
    [m] = mdir.all()
    assert m.host == "i-0000" and m.recoveries[0]["launched"] == {"i-0000": SPOT}


def test_a_capacity_error_moves_to_the_next_candidate_with_its_code(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT, ON_DEMAND))
    cloud = Cloud(refuse={SPOT: NO_CAPACITY})
    records = managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=cloud)
    failed, recovering, recovered = records
    assert failed["outcome"] == "candidate_failed" and failed["candidate"] == SPOT
    assert failed["code"] == "InsufficientInstanceCapacity" and failed["capacity"] is True
    assert recovering["onto"] == "i-0000" and recovered["to_host"] == "i-0000"
    assert [c for c, _ in cloud.calls] == [SPOT, ON_DEMAND]


def test_another_launch_error_is_said_as_it_is_and_the_next_is_tried(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT, "b"))
    denied = "launch: aws us-east-1 RunInstances: UnauthorizedOperation: not allowed"
    records = managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=Cloud(refuse={SPOT: denied}))
    assert records[0]["capacity"] is False and records[0]["error"] == denied
    assert records[-1]["outcome"] == "recovered" and records[-1]["to_host"] == "b"


def test_every_candidate_refused_waits_and_tries_again(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT,))
    cloud = Cloud(refuse={SPOT: NO_CAPACITY})
    records = managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=cloud)
    assert [r["outcome"] for r in records] == ["candidate_failed", "waiting"]
    assert mdir.all()[0].finished is None  # capacity may come back: not given up


def test_a_controller_killed_mid_launch_asks_for_the_same_instance_again(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT,))
    cloud = Cloud()

    def killed(candidate: CloudCandidate, token: str, like: str | None = None) -> str:
        cloud(candidate, token, like)  # the instance is made, then the controller dies before it journals
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=killed)
    start = Starts()
    managed_pass(Agents(TAKEN_ON_A), None, mdir, start=start, cloud=cloud)
    assert cloud.calls[0][1] == cloud.calls[1][1]  # the same token: the provider finds the first
    assert len(cloud.made) == 1 and start.calls[0][1].host == "i-0000"


def test_a_lost_cloud_host_cools_its_candidate_down(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, (SPOT, ON_DEMAND))
    cloud = Cloud()
    managed_pass(Agents(TAKEN_ON_A), None, mdir, start=Starts(), cloud=cloud)
    [m] = mdir.all()
    agents = Agents({m.host: {"0": {"state": "stopped", "reason": "preempted"}}})  # the new host taken too
    _retag(mdir)
    start = Starts()
    managed_pass(agents, None, mdir, start=start, cloud=cloud)
    assert [c for c, _ in cloud.calls] == [SPOT, ON_DEMAND]  # the spot zone just taken is skipped
    assert cloud.calls[1][1] == f"gpudeck-{JOB}-r2-n0-c1"


def _retag(mdir: ManagedDir) -> None:
    """The fake agents answer for JOB only: make the recovered job answer under that id too."""
    [m] = mdir.all()
    mdir.save(m.but(current=JOB))


def test_the_provider_saying_terminated_is_a_loss_at_once(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, ("b",), lost_after=600.0)
    agents = Agents({"b": {}}, down={"a"})
    said = {"a": "running"}
    start = Starts()
    assert managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=start, instance_state=said.get) == []
    said["a"] = "terminated"
    records = managed_pass(agents, None, mdir, clock=lambda: 1001.0, start=start, instance_state=said.get)
    assert [r["outcome"] for r in records] == ["recovering", "recovered"]
    assert "its instance is terminated (the provider says)" in records[-1]["why"]


def test_a_running_instance_keeps_waiting_for_lost_after(tmp_path: Path) -> None:
    mdir = one_node(tmp_path, ("b",), lost_after=60.0)
    agents, start = Agents({"b": {"0": RUNNING}}, down={"a"}), Starts()
    running = {"a": "running"}.get
    assert managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=start, instance_state=running) == []
    assert managed_pass(agents, None, mdir, clock=lambda: 1030.0, start=start, instance_state=running) == []
    assert start.calls == []
    records = managed_pass(agents, None, mdir, clock=lambda: 1061.0, start=start, instance_state=running)
    assert records[-1]["outcome"] == "recovered"


def test_policy_run_says_which_candidate_failed_and_whether_for_capacity(tmp_path: Path) -> None:
    from tui.commands.policy import _line

    mdir = one_node(tmp_path, (SPOT, "b"))
    records = managed_pass(
        Agents(TAKEN_ON_A),
        None,
        mdir,
        clock=lambda: 1000.0,
        start=Starts(),
        cloud=Cloud(refuse={SPOT: NO_CAPACITY}),
    )
    later = time.strftime("%H:%M:%S", time.localtime(1060.0))  # its first cool-down: one minute
    assert _line(records[0]) == (
        f"managed  one ({JOB})  candidate_failed {SPOT}  no capacity: {NO_CAPACITY} (next try {later})"
    )
