"""`gpudeck gc` beyond code (the agent's `gc` op, a real local agent): environments no live job uses
and none used in the last N days go, a live job's stays, one being built (its lock held) stays, and a
reuse counts as a use; data trees no live job links to and not used in N days go with their objects,
a live job's tree and objects stay and its PATH still reads; `--json` says what was freed per kind."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

import pytest

from remote_agent.pyenv.build import READY_NAME, USED_NAME, envs_root
from tests.conftest import gpudeck
from tests.support.jobs import launch, wait_state
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: F401 - fixtures
from tests.support.waiting import wait_for
from tests.support.wheels import job_path, make_wheel, uv_binary
from tui.actions import find
from tui.actions import launch as launching
from tui.actions.options import LaunchOptions
from tui.remote.client import AgentClient
from tui.session import Session

pytestmark = pytest.mark.slow  # real jobs, environments and data caches: one to two seconds each

UV = uv_binary()
needs_uv = pytest.mark.skipif(UV is None, reason="uv is not installed (a dev dependency: pip install uv)")
FINAL = {"exited", "failed", "stopped", "killed"}
LONG_AGO = time.time() - 30 * 86400
SLEEP = ["python3", "-c", "import time; time.sleep(120)"]


def age(*paths: Path) -> None:
    """As if last used a month ago."""
    for path in paths:
        if path.exists():
            os.utime(path, (LONG_AGO, LONG_AGO))


def env_job(
    client: AgentClient, workdir: Path, path: str, wheels: Path, requirements: str, argv: list[str]
) -> dict:
    job = launch(
        client,
        workdir,
        argv,
        path=path,
        env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)},
        environment={"requirements": requirements, "source": "requirements.txt"},
    )
    return wait_for(
        lambda: (j := _job(client, job["id"]))["environment"]["key"] and j["state"] != "starting" and j,
        timeout=60,
        what="its environment",
    )


def _job(client: AgentClient, job_id: str) -> dict:
    return next(j for j in client.request("jobs")["jobs"] if j["id"] == job_id)


def aged_env(agent_dir: Path, key: str) -> Path:
    directory = envs_root(agent_dir) / key
    age(directory / READY_NAME, directory / USED_NAME)
    return directory


@needs_uv
def test_gc_keeps_a_live_jobs_environment_and_one_used_lately_and_removes_an_unused_one(
    client: AgentClient, agent_dir: Path, workdir: Path, tmp_path: Path
) -> None:
    make_wheel(tmp_path / "wheels", "gdtiny", "0.1")
    path = job_path(tmp_path / "bin", UV)
    live = env_job(client, workdir, path, tmp_path / "wheels", "gdtiny==0.1\n", SLEEP)
    done = env_job(client, workdir, path, tmp_path / "wheels", "# nothing\n", ["true"])
    assert wait_state(client, done["id"], FINAL)["state"] == "exited"
    live_dir, old_dir = (
        aged_env(agent_dir, live["environment"]["key"]),
        aged_env(agent_dir, done["environment"]["key"]),
    )

    answer = client.request("gc", keep_days=1, timeout=60)
    assert answer["envs"]["removed"] == 1 and answer["envs"]["live"] == 1, answer
    assert answer["envs"]["bytes_freed"] > 0 and answer["bytes_freed"] >= answer["envs"]["bytes_freed"]
    assert not old_dir.exists() and (live_dir / READY_NAME).is_file()
    assert not list(envs_root(agent_dir).glob(".gc-*"))

    client.request("kill", job=live["id"], node="0", timeout=60)
    aged_env(agent_dir, live["environment"]["key"])
    again = env_job(client, workdir, path, tmp_path / "wheels", "gdtiny==0.1\n", ["true"])
    assert wait_state(client, again["id"], FINAL)["state"] == "exited"
    assert "reused environment" in (agent_dir / "jobs" / again["id"] / "0" / "output.log").read_text()
    # the reuse counted as a use: no live job now, yet it stays
    assert client.request("gc", keep_days=1, timeout=60)["envs"]["removed"] == 0
    assert (live_dir / READY_NAME).is_file()


def test_gc_keeps_an_environment_being_built_and_removes_a_dead_build(
    client: AgentClient, agent_dir: Path
) -> None:
    envs = envs_root(agent_dir)
    building = envs / "0123456789abcdef"
    (building / "bin").mkdir(parents=True)  # half made: no ready marker yet
    (building / "bin" / "pip").write_bytes(b"x" * 1000)
    age(building)
    fd = os.open(envs / "0123456789abcdef.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as its builder holds it
        answer = client.request("gc", keep_days=0)["envs"]
        assert (answer["removed"], answer["building"]) == (0, 1), answer
        assert (building / "bin" / "pip").exists()
    finally:
        os.close(fd)
    answer = client.request("gc", keep_days=0)["envs"]  # the builder died: what it left goes
    assert (answer["removed"], answer["bytes_freed"]) == (1, 1000), answer
    assert not building.exists()


@pytest.fixture
def session(gpudeck_home: Path):
    s = Session()
    yield s
    s.close()


def test_gc_keeps_a_live_jobs_data_and_removes_an_old_unused_tree_with_its_objects(
    session: Session, agent_dir: Path, workdir: Path, s3: S3
) -> None:
    s3.bucket("bkt", {"live/a.txt": b"live a\n", "live/b.txt": b"live b\n", "old/c.bin": b"c" * 5000})

    def run(data: str, argv: tuple[str, ...]) -> str:
        opts = LaunchOptions(argv=argv, workdir=str(workdir), data=(data,))
        return launching.launch(session, session.store, opts).id

    live = run("s3://bkt/live:live", ("sh", "-c", "cat live/a.txt; exec sleep 120"))
    old = run("s3://bkt/old:old", ("true",))
    wait_for(lambda: find.resolve(session, old).state == "exited", timeout=30, what="the old job's end")
    wait_for(lambda: find.resolve(session, live).state == "running", timeout=30, what="the live job runs")
    data = agent_dir / "data"
    age(*(data / "trees").iterdir(), *(data / "objects").iterdir())

    answer = json.loads(gpudeck("gc", "--json", "--keep-days", "1", "--host", "local").stdout)
    assert answer["host"] == "local" and answer["keep_days"] == 1
    assert {k: answer["data"][k] for k in ("trees_removed", "trees_kept", "live", "objects_removed")} == {
        "trees_removed": 1,
        "trees_kept": 1,
        "live": 1,
        "objects_removed": 1,
    }
    assert answer["data"]["bytes_freed"] == 5000 and answer["bytes_freed"] >= 5000
    assert set(answer) >= {"code", "envs", "data"}
    assert sorted(p.read_bytes() for p in (data / "objects").iterdir()) == [b"live a\n", b"live b\n"]
    assert (workdir / "live" / "b.txt").read_bytes() == b"live b\n"  # the live job's PATH still reads
    assert not (workdir / "old").resolve().exists()

    # a tree used lately stays whoever used it: a month is not a minute
    again = run("s3://bkt/old:old", ("true",))
    wait_for(lambda: find.resolve(session, again).state == "exited", timeout=30, what="its end")
    assert json.loads(gpudeck("gc", "--json", "--keep-days", "1").stdout)["data"]["trees_removed"] == 0


def test_gc_reads_keep_days_and_the_older_code_keep_days_from_hosts_toml(gpudeck_home: Path) -> None:
    hosts = gpudeck_home / "hosts.toml"
    hosts.write_text('[hosts.local]\ncode_keep_days = "soon"\n')
    r = gpudeck("gc", "--host", "local")
    assert r.returncode == 2 and "[hosts.local] code_keep_days: expected a number of days >= 0" in r.stderr
    hosts.write_text("[hosts.local]\nkeep_days = 3\ncode_keep_days = 1\n")  # the new name wins
    r = gpudeck("gc", "--json", "--host", "local")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["keep_days"] == 3
