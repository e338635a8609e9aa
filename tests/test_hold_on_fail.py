"""`run --hold-on-fail DURATION` (remote_agent/supervision/hold.py): a failed job's node is kept
for debugging -- its dir, its core files (RLIMIT_CORE raised), its environment -- until then or until
`gpudeck stop JOB` lets it go; real CLI, real agent, real processes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import launch, wait_state
from tests.support.tui import select_job, sync, until
from tests.support.waiting import wait_for
from tui.fleet.holds import held_text
from tui.remote.client import AgentClient, AgentError


def ps_row(job_id: str) -> str:
    return next(line for line in gpudeck("ps", "--all").stdout.splitlines() if line.startswith(job_id))


def job_json(job_id: str) -> dict:
    return next(j for j in json.loads(gpudeck("ps", "--all", "--json").stdout) if j["id"] == job_id)


def test_the_agent_holds_a_failed_node_until_released(client: AgentClient, workdir: Path) -> None:
    job = launch(client, workdir, ["bash", "-c", "exit 3"], hold_on_fail=600)
    obj = wait_state(client, job["id"], {"failed"})
    assert obj["held_until"] == pytest.approx(obj["ended_at"] + 600, abs=1)
    with pytest.raises(
        AgentError, match=r"is held for debugging: `gpudeck stop` it \(lets it go\) before removing"
    ):
        client.request("rm", job=job["id"], node="0")
    released = client.request("release", job=job["id"], node="0")["held_until"]
    assert obj["ended_at"] <= released <= time.time()  # the hold ended then (cost counts up to it)
    assert wait_state(client, job["id"], {"failed"})["held_until"] == released  # the listing read it again
    with pytest.raises(AgentError, match="is not held for debugging"):
        client.request("release", job=job["id"], node="0")
    assert client.request("rm", job=job["id"], node="0") == {"removed": job["id"]}


@pytest.mark.slow  # a dozen CLI calls: ~15 s
def test_a_failed_job_is_held_until_let_go(agent_dir: Path, workdir: Path) -> None:
    script = "ulimit -c > core-limit; exit 3"
    before = time.time()
    job_id = gpudeck("run", "--hold-on-fail", "2h", "--", "bash", "-c", script, cwd=workdir).stdout.strip()
    obj = wait_for(lambda: (j := job_json(job_id))["state"] == "failed" and j, what="the job's failure")
    # held two hours from its end, and ps/inspect say so
    assert before + 7200 <= obj["held_until"] <= time.time() + 7200
    said = held_text(obj["held_until"])  # `held for debugging until HH:MM` (the date too when not today)
    assert "failed(3) (held)" in ps_row(job_id) and f"{said}; exited with code 3" in ps_row(job_id)
    shown = gpudeck("inspect", job_id).stdout
    assert f"  {said}: `gpudeck ssh {job_id}` to look, `gpudeck stop {job_id}` to let it go" in shown
    # its processes could dump core (the hard limit, not the shell's 0), its environment is kept
    assert (workdir / "core-limit").read_text().strip() == "unlimited"
    node_dir = agent_dir / "jobs" / job_id / "0"
    env = json.loads((node_dir / "env.json").read_text())
    assert env["GPUDECK_JOB_ID"] == job_id and (node_dir / "env.json").stat().st_mode & 0o777 == 0o600
    # its dir stays: rm is refused while it holds
    refused = gpudeck("rm", job_id)
    assert refused.returncode != 0 and "held for debugging" in refused.stderr and node_dir.is_dir()
    # `stop` lets it go early; then it is an ended job like any other
    let_go = gpudeck("stop", job_id)
    assert let_go.stdout.strip() == f"{job_id} is no longer held for debugging", let_go.stderr
    assert job_json(job_id)["held_until"] is None and "(held)" not in ps_row(job_id)
    assert gpudeck("rm", job_id).returncode == 0 and not node_dir.exists()


@pytest.mark.slow  # CLI calls polled: ~7 s
def test_a_job_that_succeeds_is_not_held(workdir: Path) -> None:
    job_id = gpudeck("run", "--hold-on-fail", "30m", "--", "true", cwd=workdir).stdout.strip()
    wait_for(lambda: job_json(job_id)["state"] == "exited", what="the job's exit")
    assert job_json(job_id)["held_until"] is None and "(held)" not in ps_row(job_id)


def test_a_bad_duration_is_one_usage_line(workdir: Path) -> None:
    bad = gpudeck("run", "--hold-on-fail", "forever", "--", "true", cwd=workdir)
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        == "gpudeck: --hold-on-fail 'forever': a duration (90s, 30m, 2h, 1d), at most 30 days"
    )


@pytest.mark.slow  # a held job priced, `cost` three times: ~8 s
def test_cost_counts_the_held_time_until_it_is_let_go(workdir: Path) -> None:
    assert gpudeck("hosts", "set", "local", "price_per_hour=36").returncode == 0
    job_id = gpudeck("run", "--hold-on-fail", "1h", "--", "false", cwd=workdir).stdout.strip()
    wait_for(lambda: job_json(job_id)["state"] == "failed", what="the job's failure")

    def held() -> dict:
        report = json.loads(gpudeck("cost", "--json").stdout)
        return next(j for j in report["jobs"] if j["id"] == job_id)

    first = held()
    assert first["held_s"] > 0 and first["held_usd"] > 0
    later = wait_for(lambda: (h := held())["held_s"] > first["held_s"] + 0.5 and h, what="the held time")
    assert later["held_usd"] > first["held_usd"]  # still counting while it holds
    row = next(line for line in gpudeck("cost").stdout.splitlines() if line.startswith(job_id))
    assert "for debugging: $" in row
    gpudeck("stop", job_id)
    settled = held()
    again = held()
    assert (
        settled["held_s"] == again["held_s"] and settled["held_usd"] == again["held_usd"]
    )  # stopped counting


def test_the_hold_is_said_in_local_time() -> None:
    today = time.mktime(time.localtime()[:3] + (23, 59, 0, 0, 0, -1))
    assert held_text(today) == "held for debugging until 23:59"
    assert held_text(today + 86400).startswith("held for debugging until 20")  # another day: its date


def test_the_tuis_job_row_and_view_say_the_hold() -> None:
    from tui.fleet.jobs import JobModel
    from tui.widgets.jobs_table import _info

    until = time.time() + 3600
    job = JobModel(id="j1")
    node = job.node_for("0", "gpu1")
    job.apply_record("gpu1", node, {"kind": "state", "state": "running", "pid": 7}, 1.0)
    assert job.held_until(time.time()) is None
    end = {"kind": "state", "state": "failed", "exit_code": 3, "signal": None, "held_until": until}
    job.apply_record("gpu1", node, end, 2.0)
    assert job.held_until(time.time()) == until
    info = _info(job, [])
    assert str(info) == f"{held_text(until)}; exit code 3"
    assert any("$warning" in str(span.style) for span in info.spans)
    # released (the agent's object now says when): an ended job like any other
    job.apply_object({"id": "j1", "node": "0", "state": "failed", "exit_code": 3, "held_until": 2.5}, "gpu1")
    assert job.held_until(time.time()) is None and str(_info(job, [])) == "exit code 3"


def test_a_managed_jobs_recovery_waits_for_the_hold(tmp_path: Path) -> None:
    from tests.test_managed import JOB, Agents, Starts, chain
    from tui.managed.recover import managed_pass

    mdir = chain(tmp_path, recover_on=("failure",))
    start = Starts()
    failed = {"state": "failed", "cause": "CUDA error", "exit_code": 1, "held_until": time.time() + 3600}
    assert managed_pass(Agents({JOB: failed}), None, mdir, start=start) == [] and not start.calls
    let_go = dict(failed, held_until=time.time() - 1)  # released (or over): it recovers as before
    records = managed_pass(Agents({JOB: let_go}), None, mdir, start=start)
    assert [r["outcome"] for r in records] == ["recovering", "recovered"] and len(start.calls) == 1


@pytest.mark.slow  # the whole app with a real failed job: ~6 s
@pytest.mark.timeout(120)
@sync
async def test_the_tuis_stop_key_lets_a_held_job_go(
    gpudeck_home: Path, client: AgentClient, workdir: Path
) -> None:
    from tui.app import GpuDeckApp
    from tui.screens.confirm import ConfirmScreen

    job = launch(client, workdir, ["bash", "-c", "exit 3"], name="held-one", hold_on_fail=600)
    wait_state(client, job["id"], {"failed"})
    app = GpuDeckApp()
    async with app.run_test(size=(160, 48)) as pilot:

        def model():  # type: ignore[no-untyped-def]
            return app.fleet.jobs.get(job["id"])

        await until(pilot, lambda: model() is not None and model().held_until(time.time()), "the held job")
        await select_job(pilot, app, job["id"])  # the jobs tab, its row under the cursor
        assert app.screen.check_action("stop_job", ()) is True  # ended, but held: `s` lets it go
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen) and app.screen.armed, "the confirm")
        await pilot.press("y")
        await until(
            pilot, lambda: wait_state(client, job["id"], {"failed"})["held_until"] <= time.time(), "released"
        )
        await until(
            pilot, lambda: any("no longer held" in n.message for n in app._notifications), "the notice"
        )
