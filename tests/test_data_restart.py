"""`--data` through restarts (local agent, moto S3 on 127.0.0.1): a restart presigns the launch's listing
again, so an object evicted from the host's cache is fetched anew; it keeps the launch's objects (a key
added since is not taken), refuses, before anything stops, when one of them changed in the store, and
`--refresh-data` takes the current objects instead. A node on a new host gets the job's own sources
with their launch listing and that host's own ones listed anew."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from remote_agent.datafetch.cache import object_name
from remote_agent.spec import DataObject, DataSource
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: F401 - fixtures
from tests.support.waiting import wait_for
from tui.actions import control, find, launch
from tui.actions.control import JobTarget
from tui.actions.options import LaunchOptions
from tui.data.plan import DataPlan
from tui.data.renew import DataRenewal
from tui.errors import GpudeckError
from tui.session import Session

pytestmark = pytest.mark.slow  # real jobs, restarts and a moto S3 server: a second or two each

OBJECTS = {f"ds/part-{i}.txt": f"row {i}\n".encode() * (i + 1) for i in range(4)}


@pytest.fixture
def session(gpudeck_home: Path):
    s = Session()
    yield s
    s.close()


def ended(session: Session, job_id: str) -> find.Job:
    wait_for(
        lambda: find.resolve(session, job_id).state in ("exited", "failed"), timeout=30, what=f"{job_id} ends"
    )
    return find.resolve(session, job_id)


def output(job_id: str) -> str:
    node = next((Path(os.environ["GPUDECK_HOME"]) / "local-agent" / "jobs" / job_id).iterdir())
    return (node / "output.log").read_text()


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def launched(session: Session, workdir: Path, argv: tuple[str, ...] = ("true",)) -> str:
    opts = LaunchOptions(argv=argv, workdir=str(workdir), data=("s3://bkt/ds:data",))
    return launch.launch(session, session.store, opts).id


def restart(session: Session, job_id: str, refresh: bool = False) -> str:
    target = JobTarget.of_job(find.resolve(session, job_id))
    return control.restart(session, session.store, target, refresh_data=refresh)


def test_a_restart_fetches_an_object_evicted_from_the_cache(
    session: Session, workdir: Path, agent_dir: Path, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    first = launched(session, workdir)
    assert ended(session, first).state == "exited"
    evicted = DataObject("ds/part-2.txt", len(OBJECTS["ds/part-2.txt"]), "")
    etag = s3.client.head_object(Bucket="bkt", Key=evicted.key)["ETag"].strip('"')
    (agent_dir / "data" / "objects" / object_name(DataObject(evicted.key, evicted.size, etag))).unlink()
    shutil.rmtree(agent_dir / "data" / "trees")  # the tree that linked it goes too

    again = restart(session, first)
    job = ended(session, again)
    assert job.state == "exited", job.first.get("cause")
    assert "1 fetched" in output(again), output(again)
    assert tree(workdir / "data") == {k[len("ds/") :]: v for k, v in OBJECTS.items()}
    assert not list((agent_dir / "jobs" / again).glob("*/data-urls.json"))  # gone once fetched


def test_a_restart_keeps_the_launchs_objects_and_refresh_takes_the_current_ones(
    session: Session, workdir: Path, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    first = launched(session, workdir)
    assert ended(session, first).state == "exited"
    s3.put("bkt", "ds/added-later.txt", b"new\n")

    kept = restart(session, first)
    assert ended(session, kept).state == "exited"
    assert "added-later.txt" not in tree(workdir / "data")  # the launch's listing, not the prefix's now

    refreshed = restart(session, kept, refresh=True)
    assert ended(session, refreshed).state == "exited"
    assert tree(workdir / "data")["added-later.txt"] == b"new\n"
    # the refreshed listing is the new job's own: its restart keeps it
    again = restart(session, refreshed)
    assert ended(session, again).state == "exited" and "added-later.txt" in tree(workdir / "data")


def test_a_changed_object_refuses_the_restart_before_the_job_stops(
    session: Session, workdir: Path, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    running = launched(session, workdir, ("sh", "-c", "cat data/part-0.txt; exec sleep 60"))
    wait_for(lambda: "row 0" in output(running), timeout=30, what="the job's first line")
    s3.put("bkt", "ds/part-0.txt", b"rewritten\n")

    with pytest.raises(GpudeckError) as refused:
        restart(session, running)
    assert str(refused.value).startswith(
        "--data s3://bkt/ds: object ds/part-0.txt changed since the job was launched (ETag "
    )
    assert str(refused.value).endswith("--refresh-data takes the current objects instead")
    assert find.resolve(session, running).state == "running"  # nothing was stopped

    s3.put("bkt", "ds/part-0.txt", OBJECTS["ds/part-0.txt"])  # the same bytes: the same ETag again
    s3.client.delete_object(Bucket="bkt", Key="ds/part-1.txt")
    with pytest.raises(GpudeckError, match=r"object ds/part-1.txt is gone from the store"):
        restart(session, running)

    s3.put("bkt", "ds/part-0.txt", b"rewritten\n")
    fresh = restart(session, running, refresh=True)
    wait_for(lambda: "rewritten" in output(fresh), timeout=30, what="the new bytes")
    assert "part-1.txt" not in tree(workdir / "data")
    control.end(session, JobTarget.of_job(find.resolve(session, fresh)), "kill")


def test_a_new_host_gets_the_jobs_own_sources_and_its_own_listed_anew(gpudeck_home: Path, s3: S3) -> None:
    s3.bucket("bkt", OBJECTS)
    s3.bucket("hostbkt", {"tok/a": b"a", "tok/b": b"b"})
    (gpudeck_home / "hosts.toml").write_text('[hosts.local]\ndata = ["s3://hostbkt/tok:/tmp/tok"]\n')
    launch_sources, _ = DataPlan(("s3://bkt/ds:data",)).for_host("local")
    assert [s.from_host for s in launch_sources] == [None, "local"]
    s3.put("bkt", "ds/added-later.txt", b"new\n")  # after the launch: not the job's data

    # the job's node was on gpu9, whose own source a node elsewhere does not get
    as_launched = (launch_sources[0], DataSource(url="s3://other/x", path="x", from_host="gpu9"))
    sources, urls = DataRenewal().for_new_host(as_launched, "local")
    assert [(s.url, s.from_host) for s in sources] == [("s3://bkt/ds", None), ("s3://hostbkt/tok", "local")]
    assert sources[0].objects == launch_sources[0].objects  # the launch's listing, presigned again
    assert set(urls["0"]) == set(OBJECTS) and set(urls["1"]) == {"tok/a", "tok/b"}
