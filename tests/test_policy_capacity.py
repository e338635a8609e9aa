"""The controller's capacity path, fast: a rule grows a job whose pool has no free GPU → the pool's
launch fields are checked, the budgets asked, one instance launched, the pool grown, the job scaled
onto the new host; each step journaled. Fakes stand only for the agents and the cloud (the slow
end-to-end test in test_policy_launch.py uses the real ones)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tui.actions.find import Job
from tui.errors import GpudeckError
from tui.policy.capacity import CapacityLaunched, launch_refusal
from tui.policy.controller import Controller
from tui.policy.inputs import JobFacts, Point
from tui.policy.journal import PolicyJournal
from tui.policy.pool_file import add_pool_host
from tui.policy.rules import PolicyError, Pool, load

NOW = 1_800_000_000.0
POOL = (
    '[pool.gpus]\nhosts = ["alpha"]\nlaunch = true\nprovider = "aliyun"\ninstance_type = "ecs.gn7i-c8g1.2xlarge"\n'
    'image = "img-1"\nssh_port = 2222\n\n'
)
RULE = (
    '[[rule]]\nname = "backlog"\nkind = "metric"\npool = "gpus"\nmetric = "backlog"\nabove = 10000\nadd = 1\n'
    "max = 4\n"
)


@dataclass
class FakeObserver:
    hosts: tuple[str, ...] = ("alpha",)

    def sync(self, jobs: list[Job]) -> list[str]:
        return []

    def view(self, job: Job, now: float) -> JobFacts:
        return JobFacts(
            job.id,
            job.name,
            len(job.nodes),
            tuple(dict.fromkeys(n["host"] for n in job.nodes)),
            metrics={"backlog": [Point(now - 1, 12000.0)]},
        )


@dataclass
class FakeCloud:
    free_gpus: dict[str, int] = field(default_factory=lambda: {"alpha": 0})
    per_hour: float | None = 2.0
    fail: str | None = None
    launched: list[Pool] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # every launch's client token, failed ones too

    def free(self, hosts: Sequence[str]) -> Mapping[str, int]:
        return {h: self.free_gpus[h] for h in hosts if h in self.free_gpus}

    def price(self, pool: Pool) -> float | None:
        return self.per_hour

    def launch(self, pool: Pool, token: str) -> CapacityLaunched:
        self.tokens.append(token)
        if self.fail:
            raise GpudeckError(self.fail)
        self.launched.append(pool)
        return CapacityLaunched(f"i-new{len(self.launched)}", f"i-new{len(self.launched)}")


def controller(
    tmp_path: Path,
    cloud: FakeCloud,
    fleet: tuple[float | None, float | None] | None = None,
    text: str = POOL + RULE,
) -> tuple[Controller, list[tuple[int, tuple[str, ...]]]]:
    path = tmp_path / "policies.toml"
    path.write_text(text)
    resized: list[tuple[int, tuple[str, ...]]] = []

    def resize(job: Job, count: int, onto: tuple[str, ...], new_id: str = "") -> str:
        resized.append((count, onto))
        return "j-new"

    job = Job("j1", "yolo", [{"host": "alpha", "state": "running"}])
    ctl = Controller(
        jobs=lambda: [job],
        observer=FakeObserver(),
        policies=load(path),  # type: ignore[arg-type]
        journal=PolicyJournal(tmp_path / "journal.jsonl"),
        resize=resize,
        clock=lambda: NOW,
        capacity=cloud,
        fleet=None if fleet is None else (lambda: fleet),
    )
    return ctl, resized


def test_no_free_gpu_in_the_pool_launches_one_instance_and_scales_onto_it(tmp_path: Path) -> None:
    cloud = FakeCloud()
    ctl, resized = controller(tmp_path, cloud, fleet=(100.0, 3.0))
    launching, launched, intent, applied = ctl.tick()
    assert intent["outcome"] == "intent" and intent["intent_id"] == applied["intent_id"]
    assert resized == [(2, ("i-new1",))]
    assert (launching["outcome"], launching["rank"], launching["token"]) == ("launching", 1, cloud.tokens[0])
    assert launched["token"] == cloud.tokens[0]
    assert [p.instance_type for p in cloud.launched] == ["ecs.gn7i-c8g1.2xlarge"] and cloud.launched[
        0
    ].ssh_port == 2222
    assert (launched["outcome"], launched["host"], launched["instance"]) == ("launched", "i-new1", "i-new1")
    assert (applied["outcome"], applied["new_job"], applied["from"], applied["to"]) == (
        "applied",
        "j-new",
        1,
        2,
    )
    assert applied["capacity"] == {
        "pool": "gpus",
        "free_gpus": {"alpha": 0},
        "launch": "ecs.gn7i-c8g1.2xlarge",
        "provider": "aliyun",
        "per_hour": 2.0,
        "fleet_budget_left": 100.0,
        "fleet_burn": 3.0,
        "onto": ["i-new1"],
    }
    assert ctl.policies.pools["gpus"].hosts == ("alpha", "i-new1")  # the pool grew


def test_a_launch_retried_after_a_failure_reuses_its_client_token(tmp_path: Path) -> None:
    cloud = FakeCloud(fail="SSH did not answer in 600 s; i-x runs")
    ctl, resized = controller(tmp_path, cloud)
    ctl.tick()
    ctl.tick()  # within RETRY_AFTER: not tried again
    assert len(cloud.tokens) == 1 and not resized
    cloud.fail = None
    restarted, resized = controller(tmp_path, cloud)  # a new `policy run`, the same journal
    launching, launched, _, applied = restarted.tick()
    assert (
        cloud.tokens == [cloud.tokens[0]] * 2
    )  # the same token: the cloud core finds the first try's instance
    assert launching["token"] == launched["token"] == cloud.tokens[0] and applied["outcome"] == "applied"


def test_a_later_launch_for_the_same_node_gets_a_new_token(tmp_path: Path) -> None:
    cloud = FakeCloud()
    ctl, _ = controller(tmp_path, cloud)
    ctl.tick()
    again, _ = controller(tmp_path, cloud)  # the job (same id) lost its node 1 and a rule grows it again
    again.clock = lambda: NOW + 3600  # past the cooldown
    again.tick()
    assert len(cloud.tokens) == 2 and cloud.tokens[0] != cloud.tokens[1]


def test_a_launched_host_is_written_into_the_pool_in_policies_toml(tmp_path: Path) -> None:
    cloud = FakeCloud()
    ctl, _ = controller(
        tmp_path,
        cloud,
        text="# my pools\n"
        + POOL.replace('hosts = ["alpha"]', 'hosts = ["alpha"]  # the box under my desk')
        + RULE,
    )
    path = tmp_path / "policies.toml"
    ctl.join_pool = lambda pool, host: add_pool_host(path, pool, host)
    _, launched, _, _ = ctl.tick()
    assert "pool_file_error" not in launched
    assert load(path).pools["gpus"].hosts == ("alpha", "i-new1")  # what a restarted controller reads
    text = path.read_text()
    assert text.startswith("# my pools\n") and "# the box under my desk" in text


def test_a_policies_file_that_cannot_take_the_host_does_not_undo_the_launch(tmp_path: Path) -> None:
    cloud = FakeCloud()
    ctl, resized = controller(tmp_path, cloud)
    path = tmp_path / "policies.toml"
    path.write_text(RULE)  # the user removed the pool meanwhile

    ctl.join_pool = lambda pool, host: add_pool_host(path, pool, host)
    _, launched, _, applied = ctl.tick()
    assert launched["pool_file_error"].startswith(f"{path}: [pool.gpus] hosts:")
    assert applied["outcome"] == "applied" and resized == [(2, ("i-new1",))]


def test_a_free_gpu_in_the_pool_is_used_before_any_launch(tmp_path: Path) -> None:
    cloud = FakeCloud(free_gpus={"alpha": 1})
    ctl, resized = controller(tmp_path, cloud)
    [_, applied] = ctl.tick()  # the intent, journaled before the resize, then its outcome
    assert resized == [(2, ())] and not cloud.launched and applied["outcome"] == "applied"


def test_a_budget_that_cannot_pay_an_hour_of_the_instance_refuses_before_launching(tmp_path: Path) -> None:
    cloud = FakeCloud(per_hour=2.0)
    ctl, resized = controller(tmp_path, cloud, fleet=(4.0, 2.5))  # 2.5/h now + 2.0/h new > 4.0 left
    [refused] = ctl.tick()
    assert not cloud.launched and not resized
    assert (refused["outcome"], refused["action"]) == ("refused", "refused")
    assert "refused before launching: the fleet's daily budget has $4.00 left" in refused["reason"]
    assert refused["capacity"]["per_hour"] == 2.0


def test_a_failed_launch_is_journaled_with_its_reason_and_nothing_is_resized(tmp_path: Path) -> None:
    cloud = FakeCloud(fail="host key for i-x is unknown (not published on the instance's console)")
    ctl, resized = controller(tmp_path, cloud)
    launching, failed = ctl.tick()
    assert not resized and failed["outcome"] == "failed" and "not published" in failed["error"]
    assert launching["outcome"] == "launching" and launching["token"] == cloud.tokens[0]
    assert ctl.tick() == []  # not retried on the next pass


def test_the_spent_daily_budget_refuses_a_scale_up_even_of_a_job_of_unknown_price(tmp_path: Path) -> None:
    ctl, resized = controller(
        tmp_path, FakeCloud(), fleet=(-1.5, 0.0), text=RULE.replace('pool = "gpus"', 'jobs = "*"')
    )
    [refused] = ctl.tick()
    assert not resized and refused["outcome"] == "refused"
    assert "the fleet's daily budget is spent ($1.50 over)" in refused["reason"]


def test_a_proposal_the_spent_daily_budget_cannot_pay_is_journaled_as_refused(tmp_path: Path) -> None:
    asked: list[int] = []
    ctl, resized = controller(
        tmp_path, FakeCloud(), text=RULE.replace('pool = "gpus"', 'jobs = "*"') + "auto = false\n"
    )
    ctl.fleet = lambda: asked.append(1) or (-1.5, 0.0)  # type: ignore[func-returns-value]
    [refused] = ctl.tick()
    assert asked == [1] and not resized
    assert (refused["action"], refused["outcome"]) == ("refused", "refused")
    assert "the fleet's daily budget is spent ($1.50 over)" in refused["reason"]
    assert ctl.tick() == []  # said once, not on every pass


def test_the_fleet_figures_are_asked_only_when_a_rule_wants_to_grow(tmp_path: Path) -> None:
    asked: list[int] = []
    ctl, _ = controller(tmp_path, FakeCloud(), text=RULE.replace('pool = "gpus"', 'jobs = "nomatch"'))
    ctl.fleet = lambda: asked.append(1) or (10.0, 0.0)  # type: ignore[func-returns-value]
    assert ctl.tick() == [] and asked == []


@pytest.mark.parametrize(
    ("extra", "line", "message"),
    [
        ("launch = true\n", 3, "[pool.gpus] launch: launch = true needs provider"),
        (
            'launch = true\nprovider = "gcp"\ninstance_type = "x"\n',
            4,
            '[pool.gpus] provider: expected "aws" or "aliyun"',
        ),
        ('launch = true\nprovider = "aws"\n', 3, "[pool.gpus] launch: launch = true needs instance_type"),
        (
            'launch = true\nprovider = "aws"\ninstance_type = "g5.xlarge"\n',
            3,
            "[pool.gpus] launch: launch = true needs image",
        ),
        ('ssh_port = "22"\n', 3, "[pool.gpus] ssh_port: expected a port number"),
    ],
)
def test_pool_launch_field_errors_name_file_line_and_field(
    tmp_path: Path, extra: str, line: int, message: str
) -> None:
    path = tmp_path / "policies.toml"
    path.write_text('[pool.gpus]\nhosts = ["alpha"]\n' + extra)
    with pytest.raises(PolicyError) as err:
        load(path)
    assert str(err.value).startswith(f"{path}:{line}: {message}")


def test_launch_refusal_pays_one_hour() -> None:
    assert launch_refusal(2.0, 1, None, None, None) is None  # no budget: nothing to refuse
    assert launch_refusal(2.0, 1, 5.0, 3.0, None) is None
    assert "price is unknown" in str(launch_refusal(None, 1, 5.0, 0.0, None))
    assert "the job's budget has $1.00 left" in str(launch_refusal(2.0, 1, None, None, 1.0))


def test_launch_refusal_speaks_the_budgets_currency() -> None:
    why = str(launch_refusal(20.0, 1, 30.0, 15.0, None, "CNY"))
    assert why == (
        "the fleet's daily budget has CNY 30.00 left, less than one hour of the fleet (CNY 15.00/h) and "
        "1 new instance(s) at CNY 20.00/h"
    )
    assert "the job's budget has CNY 1.00 left" in str(launch_refusal(2.0, 1, None, None, 1.0, "CNY"))


def test_the_controller_judges_budgets_in_the_cost_currency(tmp_path: Path) -> None:
    cloud = FakeCloud(per_hour=20.0)
    ctl, resized = controller(tmp_path, cloud, fleet=(30.0, 15.0))
    ctl.currency = "CNY"
    [refused] = ctl.tick()
    assert (
        not resized
        and "refused before launching: the fleet's daily budget has CNY 30.00 left" in refused["reason"]
    )


def test_a_jobs_price_and_budget_are_judged_in_the_cost_currency() -> None:
    from tui.policy.observe import Observer
    from tui.policy.rules import Policies

    spec = {
        "host": "alpha",
        "node": "0",
        "state": "running",
        "started_at": NOW - 3600,
        "budget": 100.0,
        "price": {"per_hour": 10.0, "currency": "CNY"},
    }
    job = Job("j1", "yolo", [spec])
    seen = Observer(lambda host: None, Policies(), currency="USD", fx={"CNY": 0.14})  # type: ignore[arg-type,return-value]
    view = seen.view(job, NOW)
    assert view.burn_per_node == pytest.approx(1.4) and view.budget_left == pytest.approx(14.0 - 1.4)
    unknown = Observer(lambda host: None, Policies(), currency="EUR")  # type: ignore[arg-type,return-value]
    assert (unknown.view(job, NOW).burn_per_node, unknown.view(job, NOW).budget_left) == (
        None,
        None,
    )  # no rate: unknown
