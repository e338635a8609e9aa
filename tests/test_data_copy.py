"""`--data s3://BUCKET/PREFIX:PATH` end to end: the client lists and presigns against a moto S3 server
on 127.0.0.1, the real local agent fetches before the command starts. The files land at PATH with
their bytes; a second job fetches only what changed; an object gone after the listing fails the job
with its cause and leaves PATH as it was; the presigned URLs are nowhere once the job is over."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.jobs import spec, wait_state
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: F401 - fixtures
from tests.support.waiting import wait_for
from tui.actions import find, launch
from tui.actions.options import LaunchOptions
from tui.data.plan import DataPlan
from tui.remote.client import AgentClient
from tui.remote.recording import redact
from tui.session import Session

pytestmark = pytest.mark.slow  # real jobs fetching from a moto S3 server: about a second each

OBJECTS = {f"ds/part-{i}.txt": f"row {i}\n".encode() * (i + 1) for i in range(10)}
OBJECTS["ds/deep/nested/blob.bin"] = os.urandom(300_000)
OBJECTS["ds/deep/"] = b""  # a console's folder marker: no file


@pytest.fixture
def session(gpudeck_home: Path):
    s = Session()
    yield s
    s.close()


def run_job(session: Session, workdir: Path, data: str, argv: tuple[str, ...] = ("true",)) -> tuple[str, str]:
    """(final state, output, or the cause when it failed) of a one-node job with `--data data`."""
    launched = launch.launch(
        session, session.store, LaunchOptions(argv=argv, workdir=str(workdir), data=(data,))
    )
    wait_for(
        lambda: find.resolve(session, launched.id).state in ("exited", "failed"), timeout=30, what="its end"
    )
    job = find.resolve(session, launched.id)
    return job.state, (job.first.get("cause") if job.state == "failed" else output(session, launched.id))


def output(session: Session, job_id: str) -> str:
    return (job_dir(job_id) / "output.log").read_text()


def job_dir(job_id: str) -> Path:
    return next((Path(os.environ["GPUDECK_HOME"]) / "local-agent" / "jobs" / job_id).iterdir())


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in path.rglob("*") if p.is_file()}


def cached(agent_dir: Path) -> set[str]:
    return {p.name for p in (agent_dir / "data" / "objects").iterdir() if not p.name.endswith(".part")}


def test_files_land_at_path_and_a_second_job_fetches_only_what_changed(
    session: Session, workdir: Path, agent_dir: Path, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    state, out = run_job(session, workdir, "s3://bkt/ds:data", ("cat", "data/part-3.txt"))
    assert state == "exited", out
    want = {k[len("ds/") :]: v for k, v in OBJECTS.items() if not k.endswith("/")}
    assert tree(workdir / "data") == want
    assert out.startswith("gpudeck: data s3://bkt/ds"), out  # the job's first output
    assert out.endswith(OBJECTS["ds/part-3.txt"].decode()), out  # ready before the command ran
    first = cached(agent_dir)
    assert len(first) == 11

    s3.put("bkt", "ds/part-0.txt", b"changed\n")
    s3.put("bkt", "ds/new.txt", b"new\n")
    s3.client.delete_object(Bucket="bkt", Key="ds/part-9.txt")
    state, out = run_job(session, workdir, "s3://bkt/ds:data")
    assert state == "exited", out
    assert len(cached(agent_dir) - first) == 2  # only the changed and the new object were fetched
    want.update({"part-0.txt": b"changed\n", "new.txt": b"new\n"})
    del want["part-9.txt"]
    assert tree(workdir / "data") == want
    assert "2 fetched" in out, out

    state, out = run_job(session, workdir, "s3://bkt/ds:data")  # unchanged: nothing fetched
    assert state == "exited" and "all cached" in out, out


def test_an_object_gone_after_listing_fails_the_job_and_path_keeps_the_old_data(
    session: Session, workdir: Path, client: AgentClient, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    assert run_job(session, workdir, "s3://bkt/ds:data")[0] == "exited"
    before = tree(workdir / "data")
    s3.put("bkt", "ds/part-5.txt", b"a new version\n")
    sources, urls = DataPlan(("s3://bkt/ds:data",)).for_host("local")
    s3.client.delete_object(Bucket="bkt", Key="ds/part-5.txt")  # listed and presigned, then gone

    raw = spec(workdir, ["true"], data=[s.to_wire() for s in sources])
    client.request("launch", timeout=30, spec=raw, data_urls=urls)
    job = wait_state(client, raw["id"], {"exited", "failed"})
    assert job["state"] == "failed"
    assert (
        job["cause"]
        == "data s3://bkt/ds: object ds/part-5.txt: HTTP 404 missing (NoSuchKey: The specified key does not exist.)"
    )
    assert tree(workdir / "data") == before  # not a half-filled mix of old and new
    assert not (job_dir(raw["id"]) / "data-urls.json").exists()


def test_presigned_urls_are_nowhere_once_the_job_is_over(
    session: Session, workdir: Path, gpudeck_home: Path, client: AgentClient, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    sources, urls = DataPlan(("s3://bkt/ds:data",)).for_host("local")
    signature = next(iter(urls["0"].values())).split("X-Amz-Signature=")[1].encode()
    assert run_job(session, workdir, "s3://bkt/ds:data")[0] == "exited"
    raw = spec(workdir, ["true"], data=[s.to_wire() for s in sources])
    client.request("launch", timeout=30, spec=raw, data_urls=urls)
    assert wait_state(client, raw["id"], {"exited", "failed"})["state"] == "exited"
    listing = str(client.request("jobs")).encode()
    assert b"X-Amz-Signature" not in listing and signature not in listing
    for path in gpudeck_home.rglob("*"):  # spec.json, the journals, output.log, state.db…
        if path.is_file() and not path.is_symlink():
            body = path.read_bytes()
            assert b"X-Amz-Signature" not in body and signature not in body, path
    assert redact({"op": "launch", "data_urls": urls}) == {"op": "launch", "data_urls": "***"}


def test_mount_without_s3fs_or_rclone_fails_with_one_line(
    session: Session, workdir: Path, s3: S3, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = os.environ["PATH"].split(os.pathsep)
    hidden = [d for d in dirs if not any(os.path.exists(os.path.join(d, t)) for t in ("s3fs", "rclone"))]
    monkeypatch.setenv("PATH", os.pathsep.join(hidden))  # the job's PATH: as launched from here
    assert shutil.which("s3fs") is None and shutil.which("rclone") is None
    launched = launch.launch(
        session,
        session.store,
        LaunchOptions(argv=("true",), workdir=str(workdir), data=("s3://bkt/ds:data:mount",)),
    )
    wait_for(
        lambda: find.resolve(session, launched.id).state in ("exited", "failed"), timeout=30, what="its end"
    )
    job = find.resolve(session, launched.id)
    assert job.state == "failed"
    assert job.first["cause"] == (
        "data s3://bkt/ds:mount: neither s3fs nor rclone is installed on this host "
        "(install one, or drop :mount to copy)"
    )


def test_a_missing_bucket_is_refused_before_anything_launches(
    session: Session, workdir: Path, agent_dir: Path, s3: S3
) -> None:
    from tui.errors import GpudeckError

    with pytest.raises(GpudeckError) as refused:
        launch.launch(
            session,
            session.store,
            LaunchOptions(argv=("true",), workdir=str(workdir), data=("s3://nope/x:data",)),
        )
    assert str(refused.value) == "--data s3://nope/x: no such bucket 'nope'"
    assert not list((agent_dir / "jobs").glob("*/*"))  # nothing launched
    s3.bucket("bkt", {"other/a": b"a"})
    with pytest.raises(GpudeckError, match=r"^--data s3://bkt/ds: no objects under that prefix$"):
        launch.launch(
            session,
            session.store,
            LaunchOptions(argv=("true",), workdir=str(workdir), data=("s3://bkt/ds:data",)),
        )


def test_path_that_holds_the_users_own_files_is_never_replaced(
    session: Session, workdir: Path, s3: S3
) -> None:
    s3.bucket("bkt", OBJECTS)
    (workdir / "data").mkdir()
    (workdir / "data" / "mine.txt").write_text("keep me")
    state, cause = run_job(session, workdir, "s3://bkt/ds:data", (sys.executable, "-c", "pass"))
    assert (state, cause) == (
        "failed",
        f"data s3://bkt/ds: PATH {workdir / 'data'}: already exists; move it away or choose another PATH",
    )
    assert (workdir / "data" / "mine.txt").read_text() == "keep me"


def test_a_restart_without_urls_uses_the_cache_and_names_what_it_lacks(
    session: Session, workdir: Path, agent_dir: Path, client: AgentClient, s3: S3
) -> None:
    """The agent's side: a `restart` that brings no `data_urls` (an older client) runs from the cache."""
    from remote_agent.names import new_job_id

    s3.bucket("bkt", OBJECTS)
    launched = launch.launch(
        session,
        session.store,
        LaunchOptions(argv=("true",), workdir=str(workdir), data=("s3://bkt/ds:data",)),
    )
    wait_for(lambda: find.resolve(session, launched.id).state == "exited", timeout=30, what="its end")

    def restart(job_id: str) -> tuple[str, str | None]:
        new_id = new_job_id()
        client.request("restart", timeout=30, job=job_id, node="0", new_id=new_id)
        job = wait_state(client, new_id, {"exited", "failed"})
        return new_id, job.get("cause") if job["state"] == "failed" else None

    again, cause = restart(launched.id)  # every object is cached
    assert cause is None and "all cached" in output(session, again)
    shutil.rmtree(agent_dir / "data")  # the host lost its cache
    _, cause = restart(again)
    assert (
        cause is not None
        and cause.startswith("data s3://bkt/ds: object ds/")
        and cause.endswith(
            "is not cached on this host and this job brought no URL for it "
            "(it was restarted without URLs: restart it with gpudeck, which presigns them again)"
        )
    )


def test_a_listing_too_big_for_one_launch_is_refused_here(
    session: Session, workdir: Path, agent_dir: Path, s3: S3
) -> None:
    from tui.data import plan
    from tui.errors import GpudeckError

    s3.bucket("bkt", {f"ds/{i}": b"x" for i in range(40)})
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(plan, "REQUEST_LIMIT", 12_000)  # ~400 bytes an object: 40 objects overflow it
        with pytest.raises(
            GpudeckError, match=r"^--data: s3://bkt/ds \(40 objects\): too many objects for one launch"
        ):
            launch.launch(
                session,
                session.store,
                LaunchOptions(argv=("true",), workdir=str(workdir), data=("s3://bkt/ds:data",)),
            )
    assert not list((agent_dir / "jobs").glob("*/*"))
