"""`gpudeck policy eval|run` with the real CLI, the real agent and real jobs on `local`; the
end-to-end run grows a 2-node job to 3 because its script printed `backlog=12000`."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.waiting import wait_for
from tests.test_policy_rules import seed_text
from tests.test_scale import job_json, ok, output
from tui import cli

SEED_FOR_EVERY_JOB = seed_text().replace('jobs = "yolo*"', 'jobs = "*"')


def write_policies(home: Path, text: str) -> Path:
    path = home / "policies.toml"
    path.write_text(text)
    return path


def journal(home: Path) -> list[dict]:
    path = home / "policy-journal.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow  # a job launched: ~1.5 s
def test_eval_at_monday_ten_in_shanghai_asks_four_nodes_of_a_one_node_job(
    gpudeck_home: Path, workdir: Path
) -> None:
    write_policies(gpudeck_home, seed_text())
    job = ok("run", "--name", "yolo-v8", "--", "sleep", "300", cwd=workdir).strip()
    other = ok("run", "--name", "bert", "--", "sleep", "300", cwd=workdir).strip()
    decisions = json.loads(ok("policy", "eval", "--at", "2026-12-07T10:00+08:00", "--json"))
    assert {d["job"]["id"] for d in decisions} == {job}  # the glob: yolo* only
    [office] = [d for d in decisions if d["rule"] == "office-hours"]
    assert office["job"] == {"id": job, "name": "yolo-v8"} and (office["from"], office["to"]) == (1, 4)
    assert office["action"] == "scale" and "Mon 10:00 CST: inside 09:00-18:00 → 4 nodes" in office["reason"]
    assert office["inputs"]["timezone"] == "Asia/Shanghai"
    [gpu] = [d for d in decisions if d["rule"] == "bigger-gpu"]
    assert gpu["action"] == "none" and "no data" in gpu["reason"]  # no GPU here: no data, never 0 %
    evening = json.loads(ok("policy", "eval", "--at", "2026-12-07T18:00+08:00", "--json"))
    assert [(d["from"], d["to"], d["action"]) for d in evening if d["rule"] == "office-hours"] == [
        (1, 1, "none")
    ]
    text = ok("policy", "eval", "--at", "2026-12-07T10:00+08:00")
    assert f"office-hours  yolo-v8 ({job})  1 → 4  scale" in text and "inputs: nodes=1" in text
    assert journal(gpudeck_home) == []  # eval only reads
    ok("kill", job)
    ok("kill", other)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["policy", "eval", "--at", "yesterday"], "policy eval: --at 'yesterday': expected ISO 8601"),
        (
            ["policy", "run", "--interval", "0"],
            "policy run: --interval 0: must be seconds from 0 (excluded) to 86400",
        ),
        (["--read-only", "policy", "run"], "policy run: refused: --read-only"),
        (["policy"], "the following arguments are required"),
    ],
)
def test_usage_errors_are_one_line_exit_2(
    gpudeck_home: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert cli.run(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_bad_policies_file_names_file_line_and_field(
    gpudeck_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_policies(gpudeck_home, SEED_FOR_EVERY_JOB.replace('for = "5m"', 'for = "soon"'))
    line = SEED_FOR_EVERY_JOB.splitlines().index('for = "5m"                # the whole time, not once') + 1
    assert cli.run(["policy", "eval"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(f"gpudeck: {path}:{line}: rule 'backlog': for:") and len(err.strip().splitlines()) == 1
    ), err


@pytest.mark.slow  # a job and a controller pass: ~2 s
def test_auto_false_only_proposes_once_and_journals_it_with_its_inputs(
    gpudeck_home: Path, workdir: Path
) -> None:
    write_policies(
        gpudeck_home,
        '[[rule]]\nname = "always-two"\nkind = "schedule"\njobs = "solo"\n'
        'between = "00:00-23:59"\nnodes = 2\notherwise = 2\nauto = false\n',
    )
    job = ok("run", "--name", "solo", "--", "sleep", "300", cwd=workdir).strip()
    first = ok("policy", "run", "--once")
    again = ok("policy", "run", "--once")
    [record] = journal(gpudeck_home)  # a later run does not say it again
    assert f"always-two  solo ({job})  1 → 2  propose [proposed]" in first and again == ""
    assert (
        record["rule"],
        record["job"]["id"],
        record["from"],
        record["to"],
        record["action"],
        record["outcome"],
    ) == ("always-two", job, 1, 2, "propose", "proposed")
    assert record["inputs"]["nodes"] == 1 and "inside" in record["inputs"]
    assert stat.S_IMODE(os.stat(gpudeck_home / "policy-journal.jsonl").st_mode) == 0o600
    assert job_json(job)["state"] == "running" and len(job_json(job)["nodes"]) == 1  # proposed, not done
    ok("kill", job)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_policy_run_grows_a_two_node_job_to_three_when_its_backlog_crosses_the_threshold(
    gpudeck_home: Path, workdir: Path
) -> None:
    write_policies(
        gpudeck_home,
        '[[rule]]\nname = "backlog"\nkind = "metric"\njobs = "yolo*"\nmetric = "backlog"\n'
        'above = 10000\nfor = "2s"\nadd = 1\nmax = 3\ncooldown = "10m"\n',
    )
    (workdir / "ck").mkdir()
    script = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; echo backlog=12000; exec sleep 300'
    job = ok(
        "run",
        "--name",
        "yolo-grow",
        "--grace",
        "5",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        script,
        "x",
        "--checkpoint-dir",
        "ck",
        cwd=workdir,
    ).strip()
    wait_for(lambda: "backlog=12000" in output(job, "0"), what="the backlog line")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    controller = subprocess.Popen(
        [sys.executable, "-m", "tui", "policy", "run", "--interval", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        [record] = wait_for(
            lambda: [r for r in journal(gpudeck_home) if r["outcome"] not in ("proposed", "intent")],
            timeout=120,
            interval=0.3,
            what="the controller's decision",
        )
    finally:
        os.killpg(controller.pid, signal.SIGINT)
        out, err = controller.communicate(timeout=30)
    assert controller.returncode == 0 and "SIGINT: stopping after this pass" in err, err
    assert record["outcome"] == "applied", (record, err)
    assert (record["rule"], record["job"]["id"], record["from"], record["to"]) == ("backlog", job, 2, 3)
    assert record["inputs"]["value"] == 12000 and record["inputs"]["threshold"] == "> 10000"
    assert "backlog > 10000 for 2s" in record["reason"]
    new = record["new_job"]
    obj = job_json(new)
    assert (
        obj["name"] == "yolo-grow"
        and obj["resized_from"] == {"job": job, "nodes": 2}
        and len(obj["nodes"]) == 3
    )
    wait_for(lambda: "rank=2 of=3" in output(new, "2"), what="the third node's line")
    assert job_json(job)["state"] == "stopped"
    assert f"backlog  yolo-grow ({job})  2 → 3  scale [applied → {new}]" in out
    assert len([r for r in journal(gpudeck_home) if r["outcome"] == "applied"]) == 1  # cooldown: once
    ok("kill", new)


@pytest.mark.slow  # a job and a controller pass: ~3 s
def test_a_scale_the_jobs_budget_cannot_pay_for_is_journaled_as_refused(
    gpudeck_home: Path, workdir: Path
) -> None:
    write_policies(
        gpudeck_home,
        '[[rule]]\nname = "backlog"\nkind = "metric"\njobs = "*"\nmetric = "backlog"\n'
        "above = 10000\nadd = 1\nmax = 3\n",
    )
    ok("hosts", "set", "local", "price_per_hour=1.5", "currency=USD")
    job = ok(
        "run",
        "--name",
        "thrifty",
        "--budget",
        "1",
        "--",
        "bash",
        "-c",
        "echo backlog=12000; exec sleep 300",
        cwd=workdir,
    ).strip()
    launched = time.time()
    wait_for(lambda: "backlog=12000" in output(job, "0"), what="the backlog line")
    # at least 3 s of spend at 1.50/h: $0.99875 or less left, which shows as 0.99x (a faster pass
    # would see $0.9996 left, which is $1.00 to 2 decimals)
    wait_for(lambda: time.time() - launched >= 3, what="3 s of the job's spend")
    out = ok("policy", "run", "--once")
    [record] = journal(gpudeck_home)
    assert (
        record["rule"],
        record["job"]["id"],
        record["from"],
        record["to"],
        record["action"],
        record["outcome"],
    ) == ("backlog", job, 1, 2, "refused", "refused")
    # 1.00 less the seconds it ran at 1.50/h, shown with the digits that make it true (0.99x, not 1.00)
    assert re.search(
        r"refused: the job's budget has \$0\.99\d left, less than one hour at 2 nodes \(\$3\.00/h\)",
        record["reason"],
    ), record["reason"]
    assert f"backlog  thrifty ({job})  1 → 2  refused [refused]" in out
    assert len(job_json(job)["nodes"]) == 1
    ok("kill", job)


@pytest.mark.slow  # a job and a controller pass: ~3 s
def test_a_resize_the_core_refuses_is_journaled_as_failed_with_its_error(
    gpudeck_home: Path, workdir: Path
) -> None:
    write_policies(
        gpudeck_home,
        '[pool.here]\nhosts = ["local"]\n\n[[rule]]\nname = "grow"\n'
        'kind = "metric"\npool = "here"\nmetric = "backlog"\nabove = 10000\nadd = 1\nmax = 3\n',
    )
    job = ok(
        "run", "--name", "no-ckpt", "--", "bash", "-c", "echo backlog=12000; exec sleep 300", cwd=workdir
    ).strip()
    wait_for(lambda: "backlog=12000" in output(job, "0"), what="the backlog line")
    ok("policy", "run", "--once")
    [intent, record] = journal(gpudeck_home)  # journaled before acting, then closed by the failure
    assert intent["outcome"] == "intent" and record["intent_id"] == intent["intent_id"]
    assert (record["rule"], record["to"], record["action"], record["outcome"]) == (
        "grow",
        2,
        "scale",
        "failed",
    )
    assert "no --checkpoint-dir or --checkpoint-uri" in record["error"]
    assert job_json(job)["state"] == "running"  # the core refused before stopping anything
    ok("kill", job)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_controller_runs_detached_as_a_gpudeck_job_and_stops_cleanly(
    gpudeck_home: Path, workdir: Path
) -> None:
    write_policies(
        gpudeck_home,
        '[[rule]]\nname = "drain"\nkind = "metric"\njobs = "yolo*"\nmetric = "backlog"\n'
        'below = 100\nadd = -1\ncooldown = "1h"\n',
    )
    (workdir / "ck").mkdir()
    job = ok(
        "run",
        "--name",
        "yolo-drain",
        "--grace",
        "5",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        "echo backlog=0; exec sleep 300",
        "x",
        "--checkpoint-dir",
        "ck",
        cwd=workdir,
    ).strip()
    wait_for(lambda: "backlog=0" in output(job, "0"), what="the backlog line")
    ctl = ok(
        "run",
        "--name",
        "policy-ctl",
        "--",
        sys.executable,
        "-m",
        "tui",
        "policy",
        "run",
        "--interval",
        "0.5",
        cwd=workdir,
    ).strip()
    [record] = wait_for(
        lambda: [r for r in journal(gpudeck_home) if r["outcome"] != "intent"],
        timeout=120,
        interval=0.3,
        what="the controller's decision",
    )
    assert (record["rule"], record["from"], record["to"], record["outcome"]) == ("drain", 2, 1, "applied"), (
        record
    )
    assert "stopped" in ok("stop", "--grace", "20", ctl)
    assert "SIGTERM: stopping after this pass" in output(ctl, "0")
    assert job_json(ctl)["exit_code"] == 0  # it finished its pass and left on its own
    # the job it resized is not part of its process tree (issue 29, finding 5): it runs on
    assert job_json(record["new_job"])["state"] == "running"
    ok("kill", record["new_job"])


@pytest.mark.slow  # a job, a cost report and a controller pass: ~4 s
@pytest.mark.parametrize(
    ("auto", "cost"),
    [
        ("", '[cost]\ncurrency = "USD"\ndaily_budget = 0.0001\n'),
        # a proposal is refused like an applied decision, and the refusal speaks the budget's currency
        ("auto = false\n", '[cost]\ncurrency = "CNY"\ndaily_budget = 0.0001\n[cost.fx]\nUSD = 7.2\n'),
    ],
    ids=["applied-usd", "proposed-cny"],
)
def test_a_spent_daily_budget_refuses_the_scale_up_and_journals_why(
    gpudeck_home: Path, workdir: Path, auto: str, cost: str
) -> None:
    write_policies(
        gpudeck_home,
        '[[rule]]\nname = "backlog"\nkind = "metric"\njobs = "*"\nmetric = "backlog"\n'
        "above = 10000\nadd = 1\nmax = 3\n" + auto,
    )
    (gpudeck_home / "config.toml").write_text(cost)
    ok("hosts", "set", "local", "price_per_hour=36", "currency=USD")  # a cent a second: today is past 0.0001
    job = ok(
        "run", "--name", "spender", "--", "bash", "-c", "echo backlog=12000; exec sleep 300", cwd=workdir
    ).strip()
    wait_for(lambda: "backlog=12000" in output(job, "0"), what="the backlog line")
    today = json.loads(ok("cost", "--json"))["fleet"]["today_usd"]
    assert today > 0.0001  # what the refusal below is about
    out = ok("policy", "run", "--once")
    [record] = journal(gpudeck_home)
    assert (record["rule"], record["from"], record["to"], record["action"], record["outcome"]) == (
        "backlog",
        1,
        2,
        "refused",
        "refused",
    )
    currency = "CNY " if "CNY" in cost else "$"
    assert f"refused: the fleet's daily budget is spent ({currency}" in record["reason"], record
    assert f"backlog  spender ({job})  1 → 2  refused [refused]" in out
    assert len(job_json(job)["nodes"]) == 1
    ok("kill", job)
