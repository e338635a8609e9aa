"""A vertical rule with `auto = true`, applied by the controller: the job moves (restart mode, from its
checkpoint) onto a host of the bigger type in its pool; with none there it stays a proposal, journaled
once with the reason; a failed move is journaled with its error. Fakes stand only for the agents'
answers (free GPUs) and the core's move; the slow test in test_policy_move.py runs the real ones."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tui.actions.find import Job
from tui.cost import catalog
from tui.errors import GpudeckError
from tui.policy.capacity import CapacityLaunched
from tui.policy.controller import Controller
from tui.policy.inputs import HostInstance, JobFacts, Point
from tui.policy.journal import PolicyJournal
from tui.policy.rules import Pool, load

NOW = 1_800_000_000.0
SMALL, BIG = "ecs.gn7-c12g1.3xlarge", "ecs.gn7-c13g1.13xlarge"  # the same A100s, 1 → 4
TEXT = (
    '[pool.a100]\nhosts = ["alpha", "beta", "gamma"]\n\n'
    '[[rule]]\nname = "bigger"\nkind = "vertical"\npool = "a100"\nabove = 90\nfor = "5m"\nauto = true\n'
)
HOSTS = {
    "alpha": {"provider": "aliyun", "instance_type": SMALL, "market": "on-demand", "instance_id": "i-alpha"},
    "beta": {"provider": "aliyun", "instance_type": BIG, "market": "on-demand"},
    "gamma": {"provider": "aliyun", "instance_type": BIG, "market": "on-demand"},
}


@dataclass
class BusyObserver:
    """alpha's GPU at 95 % for the last 10 minutes."""

    def sync(self, jobs: list[Job]) -> list[str]:
        return []

    def view(self, job: Job, now: float) -> JobFacts:
        host = str(job.first["host"])
        s = HOSTS[host]
        return JobFacts(
            job.id,
            job.name,
            len(job.nodes),
            (host,),
            instance=HostInstance(s["provider"], s["instance_type"], None, s["market"]),
            gpu={(host, "gpu_util"): [Point(now - 600 + i * 30, 95.0) for i in range(21)]},
        )


@dataclass
class Free:
    gpus: dict[str, int]
    asked: list[list[str]] = field(default_factory=list)
    released: list[tuple[str, str]] = field(default_factory=list)
    refuse: str | None = None
    launched: list[tuple[Pool, str]] = field(default_factory=list)
    per_hour: float | None = None

    def free(self, hosts: Sequence[str]) -> Mapping[str, int]:
        self.asked.append(list(hosts))
        return {h: self.gpus[h] for h in hosts if h in self.gpus}

    def price(self, pool: object) -> float | None:
        return self.per_hour

    def release(self, host: Mapping[str, str], how: str) -> str:
        if self.refuse:
            raise GpudeckError(self.refuse)
        self.released.append((host["instance_id"], how))
        return host["instance_id"]

    def launch(self, pool: Pool, token: str) -> CapacityLaunched:
        self.launched.append((pool, token))
        return CapacityLaunched(f"i-big{len(self.launched)}", f"i-big{len(self.launched)}")


def controller(
    tmp_path: Path,
    free: Free,
    fail: str | None = None,
    text: str = TEXT,
    others: tuple[Job, ...] = (),
    procs: list[int | None] | None = None,
) -> tuple[Controller, list[dict[str, str]]]:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "policies.toml"
    path.write_text(text)
    moves: list[dict[str, str]] = []

    def move(job: Job, hosts: dict[str, str], gpus: int | None) -> str:
        moves.append(hosts)
        (procs if procs is not None else []).append(gpus)
        if fail:
            raise GpudeckError(fail)
        return "j-moved"

    job = Job("j1", "yolo", [{"host": "alpha", "node": "0", "state": "running"}])
    ctl = Controller(
        jobs=lambda: [job, *others],
        observer=BusyObserver(),
        policies=load(path),  # type: ignore[arg-type]
        journal=PolicyJournal(tmp_path / "journal.jsonl"),
        resize=lambda *a: "unused",
        catalog=catalog.entries(),
        clock=lambda: NOW,
        capacity=free,
        move=move,
        host_settings=HOSTS,
    )
    return ctl, moves


def test_the_job_moves_onto_a_host_of_the_bigger_type_with_free_gpus(tmp_path: Path) -> None:
    free = Free({"beta": 0, "gamma": 4})
    procs: list[int | None] = []
    ctl, moves = controller(tmp_path, free, procs=procs)
    [applied] = ctl.tick()
    # the new type's 4 GPUs each get a process (torchrun's --nproc-per-node), not the old type's 1
    assert procs == [4] and applied["nproc_per_node"] == 4
    assert moves == [{"alpha": "gamma"}] and free.asked == [["beta", "gamma"]]  # gamma: the free GPUs
    assert (applied["outcome"], applied["kind"], applied["from"], applied["to"]) == (
        "applied",
        "vertical",
        SMALL,
        BIG,
    )
    assert applied["new_job"] == "j-moved" and applied["moved"] == {"from": "alpha", "to": "gamma"}
    assert "gpu_util > 90 for 5m" in applied["reason"]
    # the instance it left, tagged and running nothing else, is stopped (not terminated)
    assert free.released == [("i-alpha", "stop")]
    assert applied["old_instance"] == {"host": "alpha", "instance": "i-alpha", "action": "stopped"}


def test_the_old_instance_is_terminated_only_when_the_rule_says_so_and_kept_when_it_says_keep(
    tmp_path: Path,
) -> None:
    free = Free({"beta": 1})
    ctl, _ = controller(tmp_path / "t", free, text=TEXT + 'old_instance = "terminate"\n')
    [applied] = ctl.tick()
    assert free.released == [("i-alpha", "terminate")] and applied["old_instance"]["action"] == "terminated"
    kept_free = Free({"beta": 1})
    ctl, _ = controller(tmp_path / "k", kept_free, text=TEXT + 'old_instance = "keep"\n')
    [applied] = ctl.tick()
    assert not kept_free.released and applied["old_instance"] == {
        "host": "alpha",
        "instance": "i-alpha",
        "action": "kept",
        "why": 'old_instance = "keep"',
    }


def test_an_instance_that_runs_another_job_or_is_not_opted_in_is_kept(tmp_path: Path) -> None:
    free = Free({"beta": 1})
    other = Job("j2", "notebook", [{"host": "alpha", "node": "0", "state": "running"}])
    ctl, _ = controller(tmp_path / "o", free, others=(other,))
    applied = next(r for r in ctl.tick() if r["job"]["id"] == "j1")
    assert not free.released and applied["old_instance"]["why"] == "other jobs run there (j2)"
    refusing = Free(
        {"beta": 1},
        refuse="i-alpha is not tagged gpudeck-managed=true: a rule stops only instances you opted in",
    )
    ctl, _ = controller(tmp_path / "r", refusing)
    [applied] = ctl.tick()
    assert applied["outcome"] == "applied" and applied["old_instance"]["action"] == "kept"
    assert "not tagged gpudeck-managed=true" in applied["old_instance"]["why"]


def test_no_host_of_the_bigger_type_leaves_a_proposal_journaled_once(tmp_path: Path) -> None:
    ctl, moves = controller(tmp_path, Free({}), text=TEXT.replace('"beta", "gamma"', '"delta"'))
    [proposed] = ctl.tick()
    assert not moves and (proposed["outcome"], proposed["action"], proposed["to"]) == (
        "proposed",
        "propose",
        BIG,
    )
    assert (
        f"not applied: no host of type {BIG} answered in pool a100, and it does not allow launch"
        in proposed["reason"]
    )
    assert ctl.tick() == []


LAUNCHING = TEXT.replace(
    'hosts = ["alpha", "beta", "gamma"]\n',
    'hosts = ["alpha"]\nlaunch = true\nprovider = "aliyun"\n'
    f'instance_type = "{SMALL}"\nimage = "img-1"\nspot = true\n',
)


def test_with_no_host_of_the_type_a_pool_that_may_launch_gets_one_on_demand_and_the_job_moves(
    tmp_path: Path,
) -> None:
    free = Free({})
    ctl, moves = controller(tmp_path, free, text=LAUNCHING)
    launching, launched, applied = ctl.tick()
    [(pool, token)] = free.launched
    assert (pool.instance_type, pool.spot, pool.image) == (BIG, False, "img-1")  # the bigger type, on-demand
    assert launching["token"] == launched["token"] == token and launching["rank"] == 0
    assert moves == [{"alpha": "i-big1"}] and applied["moved"] == {"from": "alpha", "to": "i-big1"}
    assert ctl.policies.pools["a100"].hosts == ("alpha", "i-big1")
    assert (
        ctl.policies.pools["a100"].instance_type == SMALL
    )  # what the pool launches for a scale up is unchanged


def test_a_launch_for_a_move_the_daily_budget_cannot_pay_is_refused(tmp_path: Path) -> None:
    free = Free({}, per_hour=30.0)
    ctl, moves = controller(tmp_path, free, text=LAUNCHING)
    ctl.fleet = lambda: (20.0, 5.0)
    [refused] = ctl.tick()
    assert not free.launched and not moves and refused["outcome"] == "refused"
    assert "refused before launching: the fleet's daily budget has $20.00 left" in refused["reason"]


def test_a_failed_move_is_journaled_with_its_error_and_not_retried_at_once(tmp_path: Path) -> None:
    ctl, moves = controller(tmp_path, Free({"beta": 1}), fail="scale: j1's command has no --checkpoint-dir")
    [failed] = ctl.tick()
    assert (
        failed["outcome"] == "failed"
        and "no --checkpoint-dir" in failed["error"]
        and moves == [{"alpha": "beta"}]
    )
    assert ctl.tick() == [] and len(moves) == 1


def test_without_auto_the_bigger_type_is_only_proposed(tmp_path: Path) -> None:
    ctl, moves = controller(tmp_path, Free({"beta": 1}), text=TEXT.replace("auto = true", "auto = false"))
    [proposed] = ctl.tick()
    assert not moves and proposed["outcome"] == "proposed" and "not applied" not in proposed["reason"]
