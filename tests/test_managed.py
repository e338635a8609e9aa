"""Issue 31, managed jobs: a job whose host is lost or taken, or that fails, goes on from its
checkpoint on another host, one chain (restart_of), journaled before it acts, never twice for one
loss, and gives up explicitly. The pass runs against fake agents here (every branch), and against
real SSH hosts in the slow test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gpudeck
from tests.support.boxes import agent_dir, kill_boxes_jobs, ssh_config, two_boxes
from tests.support.sshd import SshHome
from tests.support.waiting import wait_for
from tui.actions.launch import Launched
from tui.actions.options import LaunchOptions
from tui.errors import GpudeckError
from tui.managed.records import Managed, ManagedDir, Policy, parse_recover_on
from tui.managed.recover import managed_pass

JOB = "20261205-100000-aaaaaa"


class Agents:
    """Hosts answering `jobs` (a state per job id) and `gpus`; `down` hosts raise."""

    def __init__(self, jobs: dict[str, dict[str, Any]], down: set[str] = frozenset()) -> None:
        self.jobs, self.down, self.notices = jobs, set(down), []

    def request(self, host: str, op: str, timeout: float = 30.0, **args: Any) -> Any:
        if host in self.down:
            raise GpudeckError(f"host {host} unreachable: Connection refused")
        if op == "jobs":
            return {"jobs": [dict(self.jobs[i], id=i) for i in args["ids"] if i in self.jobs]}
        return {"gpus": [{"uuid": "GPU-a", "processes": []}]}

    def hosts(self) -> list[str]:
        return ["a", "b", "c"]

    def notice(self, line: str) -> None:
        self.notices.append(line)


class Starts:
    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[tuple[str, LaunchOptions]] = []
        self.fail = fail

    def __call__(self, agents: Any, store: Any, opts: LaunchOptions, job_id: str) -> Launched:
        self.calls.append((job_id, opts))
        if self.fail:
            raise GpudeckError(self.fail)
        return Launched(job_id, opts.name or job_id, opts.host, "running")


def chain(tmp_path: Path, **policy: Any) -> ManagedDir:
    mdir = ManagedDir(tmp_path / "managed")
    opts = LaunchOptions(argv=("python", "train.py", "--checkpoint-dir", "ck"), host="a", name="train")
    mdir.save(Managed(JOB, JOB, "a", opts, Policy(**{"fallback": ("a", "b", "c"), **policy})))
    return mdir


def test_a_failed_job_goes_on_as_the_next_of_its_chain(tmp_path: Path) -> None:
    mdir = chain(tmp_path, recover_on=("failure",))
    start = Starts()
    records = managed_pass(
        Agents({JOB: {"state": "failed", "cause": "CUDA error", "exit_code": 1}}), None, mdir, start=start
    )
    assert [r["outcome"] for r in records] == ["recovering", "recovered"]  # journaled before it acts
    [(new_id, opts)] = start.calls
    assert (
        records[0]["to"] == new_id and opts.restart_of == JOB and opts.host == "a" and opts.argv[-1] == "ck"
    )
    [m] = mdir.all()
    assert m.current == new_id and m.recoveries[0]["why"] == "failed: CUDA error" and m.pending is None


def test_a_host_that_stays_unreachable_is_lost_and_the_job_goes_elsewhere(tmp_path: Path) -> None:
    mdir = chain(tmp_path, lost_after=30.0)
    agents, start = Agents({}, down={"a"}), Starts()
    assert managed_pass(agents, None, mdir, clock=lambda: 1000.0, start=start) == []  # one look is no loss
    assert managed_pass(agents, None, mdir, clock=lambda: 1029.0, start=start) == []
    records = managed_pass(agents, None, mdir, clock=lambda: 1031.0, start=start)
    assert records[-1]["outcome"] == "recovered" and records[-1]["to_host"] == "b"  # not the lost one
    assert "host a lost" in records[-1]["why"]


def test_a_preempted_job_avoids_the_taken_host_and_a_user_stop_ends_the_watching(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    start = Starts()
    agents = Agents(
        {JOB: {"state": "stopped", "reason": "preempted: aws spot instance-action stop at 12:00"}}
    )
    records = managed_pass(agents, None, mdir, start=start)
    assert records[-1]["outcome"] == "recovered" and records[-1]["to_host"] == "b"
    [m] = mdir.all()
    agents.jobs = {m.current: {"state": "stopped", "reason": "user"}}
    assert [r["outcome"] for r in managed_pass(agents, None, mdir, start=start)] == ["ended"]
    assert mdir.all()[0].finished == "stopped (user)" and len(start.calls) == 1


def test_after_max_recoveries_it_gives_up_and_says_so(tmp_path: Path) -> None:
    mdir = chain(tmp_path, recover_on=("failure",), max_recoveries=1)
    start = Starts()
    agents = Agents({JOB: {"state": "failed", "cause": "boom"}})
    managed_pass(agents, None, mdir, start=start)
    agents.jobs = {mdir.all()[0].current: {"state": "failed", "cause": "boom again"}}
    [record] = managed_pass(agents, None, mdir, start=start)
    assert record["outcome"] == "gave_up" and "gave up after 1 recovery: failed: boom again" in record["why"]
    assert agents.notices and mdir.all()[0].finished.startswith("gave up") and len(start.calls) == 1


def test_a_recovery_cut_after_its_launch_is_not_launched_twice(tmp_path: Path) -> None:
    mdir = chain(tmp_path)
    [m] = mdir.all()
    mdir.save(
        m.but(pending={"new_id": "20261205-100001-bbbbbb", "host": "b", "why": "host a lost", "at": 1.0})
    )
    start = Starts(fail="job 20261205-100001-bbbbbb node 0 already exists")  # the killed one launched it
    [record] = managed_pass(Agents({}), None, mdir, start=start)
    assert record["outcome"] == "recovered" and record["to"] == "20261205-100001-bbbbbb"
    assert [c[0] for c in start.calls] == ["20261205-100001-bbbbbb"]  # the same id, no second replacement


def test_recover_on_is_checked() -> None:
    assert parse_recover_on("failure, host-lost") == ("failure", "host-lost")
    with pytest.raises(ValueError, match="preemption, host-lost, failure"):
        parse_recover_on("spot")


def test_managed_flags_need_managed(gpudeck_home: Path, workdir: Path) -> None:
    r = gpudeck("run", "--max-recoveries", "2", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "go with --managed" in r.stderr
    r = gpudeck("run", "--managed", "--fallback", "nowhere", "--", "true", cwd=workdir)
    assert r.returncode == 2 and "--fallback: no host 'nowhere'" in r.stderr


@pytest.mark.slow  # two SSH hosts, a real loss
@pytest.mark.timeout(240)
def test_a_managed_job_whose_host_is_lost_goes_on_on_the_fallback(ssh_home: SshHome, tmp_path: Path) -> None:
    two_boxes(ssh_home)
    script = "echo on=$(hostname) step=1; exec sleep 300"
    try:
        r = gpudeck(
            "run", "--managed", "--name", "kept", "--host", "box-a", "--fallback", "box-a,box-b",
            "--lost-after", "0", "--", "sh", "-c", script,
            cwd=tmp_path,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        first = r.stdout.strip()
        gpudeck("kill", "policy", cwd=tmp_path)  # this test runs the controller's passes itself
        wait_for(lambda: "step=1" in gpudeck("logs", first, cwd=tmp_path).stdout, what="the first run")
        kill_boxes_jobs(ssh_home)
        ssh_config(ssh_home, down=("box-a",))  # box-a is gone: its address answers nothing
        out = gpudeck("policy", "run", "--once", cwd=tmp_path, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "managed  kept" in out.stdout and "recovered" in out.stdout and "box-b" in out.stdout, (
            out.stdout
        )
        [m] = ManagedDir(ssh_home.gpudeck_home / "managed").all()
        assert m.host == "box-b" and m.recoveries[0]["from"] == first
        new = json.loads(gpudeck("inspect", "--json", m.current, cwd=tmp_path).stdout)
        assert new["restart_of"] == first and new["name"] == "kept"  # one chain, one name
        assert (agent_dir(ssh_home, "box-b") / "jobs" / m.current).is_dir()
        shown = gpudeck("inspect", m.current, cwd=tmp_path).stdout
        assert f"recovered {first} on box-a → {m.current} on box-b: host box-a lost" in shown
        journal = [
            json.loads(x) for x in (ssh_home.gpudeck_home / "policy-journal.jsonl").read_text().splitlines()
        ]
        assert [r["outcome"] for r in journal if r.get("kind") == "managed"] == ["recovering", "recovered"]
    finally:
        gpudeck("kill", "policy", cwd=tmp_path)
        kill_boxes_jobs(ssh_home)
