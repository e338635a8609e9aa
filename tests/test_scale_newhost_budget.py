"""A node that a resize puts on a host the job is not on yet carries the job's cost rules: its
supervisor enforces the job's budget (priced at that host's price) and the job's cost counts its
time. Two SSH hosts (one sshd, two aliases) at two prices; a plain command under `--launcher none`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remote_agent.spec import IdleStop
from tests.conftest import gpudeck
from tests.support.boxes import agent_dir, kill_boxes_jobs, two_boxes
from tests.support.jobs import journal
from tests.support.sshd import SshHome, free_port
from tests.support.trainer_runs import ok
from tests.support.waiting import wait_for
from tui.actions.newnode import idle_text, job_cost_options
from tui.cost.idle import parse_idle_stop


def test_the_jobs_rules_in_launch_words() -> None:
    rule = parse_idle_stop("45m@7%+20m")
    assert parse_idle_stop(idle_text(IdleStop.from_wire(rule))) == rule
    first = {
        "budget": 12.5,
        "idle_stop": rule,
        "price": {"per_hour": 2.0, "currency": "USD", "share": 1.0, "source": "--price-per-hour"},
    }
    assert job_cost_options(first) == {"budget": 12.5, "price_per_hour": 2.0, "idle_stop": "45m@7%+20m"}
    # a host's own price stays that host's; no rule is `off`, not the new host's default
    hosts_price = {
        "price": {"per_hour": 2.0, "source": "hosts.toml price_per_hour"},
        "budget": None,
        "idle_stop": None,
    }
    assert job_cost_options(hosts_price) == {"budget": None, "price_per_hour": None, "idle_stop": "off"}


def node_states(job: str, cwd: Path) -> dict[str, dict]:
    return {n["node"]: n for n in json.loads(ok("inspect", "--json", job, cwd=cwd))["nodes"]}


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_node_on_a_new_host_keeps_the_jobs_budget_and_its_time_is_costed(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    two_boxes(ssh_home)
    ok(
        "hosts", "set", "box-a", "price_per_hour=0.0036", cwd=tmp_path
    )  # a cent in 10000 s: never near the budget
    ok(
        "hosts", "set", "box-b", "price_per_hour=3600", cwd=tmp_path
    )  # $1 a second: the budget goes in seconds
    script = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; exec sleep 300'
    try:
        job = ok(
            "run",
            "--name",
            "budgeted",
            "--grace",
            "2",
            "--budget",
            "6",
            "--pool",
            "box-a,box-b",
            "--host",
            "box-a",
            "--launcher",
            "none",
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            str(free_port()),
            "--",
            "bash",
            "-c",
            script,
            "x",
            "--checkpoint-dir",
            str(tmp_path / "ck"),
            cwd=tmp_path,
        ).strip()
        wait_for(lambda: "rank=0 of=1" in ok("logs", job, cwd=tmp_path), timeout=30, what="node 0's line")
        r = gpudeck("scale", job, "+1", cwd=tmp_path, timeout=120)
        assert r.returncode == 0, r.stderr
        new = r.stdout.strip()
        assert node_states(new, tmp_path)["1"]["host"] == "box-b"
        spec = json.loads((agent_dir(ssh_home, "box-b") / "jobs" / new / "1" / "spec.json").read_text())
        assert spec["budget"] == 6.0 and spec["price"]["per_hour"] == 3600.0, spec
        # box-b's node spends $1/s: its supervisor stops it at its half of the job's budget ($3 of
        # $6: a budget is the job's, split over its 2 nodes); node 0, at a cent in 10000 s, runs on
        wait_for(
            lambda: node_states(new, tmp_path)["1"]["state"] == "stopped",
            timeout=60,
            interval=0.3,
            what="node 1 stopped by the budget",
        )
        [final] = [r for r in journal(agent_dir(ssh_home, "box-b"), new, "1") if r.get("state") == "stopped"]
        assert "budget" in final["reason"] and "1/2 of the job" in final["reason"], final
        assert node_states(new, tmp_path)["0"]["state"] == "running"
        report = json.loads(ok("cost", "--json", cwd=tmp_path))
        [total] = [j for j in report["jobs"] if j["id"] == new]
        assert sorted(total["hosts"]) == ["box-a", "box-b"] and not total["price_unknown_on"], total
        # box-b's seconds at $1: its supervisor stopped it once spend + the stop's lead (grace 2 s) reached $3
        assert total["budget"] == 6.0 and total["accrued_usd"] >= 1.0, total
        ok("kill", new, cwd=tmp_path)
    finally:
        kill_boxes_jobs(ssh_home)
