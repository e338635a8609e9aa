"""The spot preemption notice (issue 31): a real agent's supervisor watches a fake metadata service
on 127.0.0.1 (AWS IMDSv2, Aliyun) while its job runs; a notice tells the job (notice file, its stop
signal) and ends it `stopped` with reason `preempted` and the notice, before the host goes."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remote_agent.preempt.act import MARGIN, notice_grace
from remote_agent.preempt.metadata import AWS_ENDPOINT, AWS_ENDPOINT_V6, NoticeError, endpoint, parse_time
from remote_agent.preempt.watch import POLL_VAR
from tests.conftest import gpudeck
from tests.support.jobs import journal, launch, wait_state
from tests.support.metadata import FakeMetadata, fake_metadata, iso
from tests.support.waiting import wait_for
from tui.remote.client import AgentClient
from tui.remote.transport import LocalTransport

# Reads the notice file its env names when told to stop, says what it read, exits 0.
LISTENER = """
import json, os, signal, sys, time
def told(*_):
    with open(os.environ["GPUDECK_PREEMPT_NOTICE"]) as f:
        print("NOTICE " + json.dumps(json.load(f)), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, told)
print("up", flush=True)
time.sleep(120)
"""
ENDED = {"stopped", "failed", "exited", "killed"}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeMetadata]:
    """The fake metadata service, found by AWS_EC2_METADATA_SERVICE_ENDPOINT as botocore finds it."""
    with fake_metadata() as served:
        monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", served.url)
        monkeypatch.setenv(POLL_VAR, "0.1")  # quick looks: these tests wait on conditions, not on 2 s polls
        yield served


@pytest.fixture
def agent(fake: FakeMetadata, agent_dir: Path) -> Iterator[AgentClient]:
    """A local agent started after the fake's env is set (its supervisors inherit it)."""
    c = AgentClient(LocalTransport(agent_dir))
    c.connect()
    yield c
    c.close()


def output(agent_dir: Path, job_id: str) -> str:
    return (agent_dir / "jobs" / job_id / "0" / "output.log").read_text()


def looks(fake: FakeMetadata) -> int:
    return sum(1 for method, path in list(fake.requests) if method == "GET" and "spot" in path)


@pytest.mark.parametrize("provider", ["aws", "aliyun"])
def test_a_notice_stops_the_job_preempted_before_the_host_goes(
    provider: str, fake: FakeMetadata, agent: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    # aws finds the fake through the env var; aliyun through the host's metadata_endpoint
    notice = (
        {"provider": provider} if provider == "aws" else {"provider": provider, "metadata_endpoint": fake.url}
    )
    job = launch(agent, workdir, [sys.executable, "-c", LISTENER], grace=600, notice=notice)
    wait_for(lambda: "up" in output(agent_dir, job["id"]), what="the job to run")
    wait_for(lambda: looks(fake) >= 2, what="the agent to look for a notice")
    assert wait_state(agent, job["id"], {"running"})["state"] == "running"  # no notice, no stop

    goes_at = fake.serve_notice(seconds=40)
    final = wait_state(agent, job["id"], ENDED)

    expected = {"provider": provider, "action": "terminate", "time": iso(goes_at)}
    assert (final["state"], final["reason"], final["exit_code"]) == ("stopped", "preempted", 0)
    assert {k: final["notice"][k] for k in expected} == expected
    assert final["ended_at"] < goes_at  # within the notice window
    # the job read the notice file its env named, before it stopped
    said = [line for line in output(agent_dir, job["id"]).splitlines() if line.startswith("NOTICE ")]
    assert [json.loads(said[0][7:])] == [final["notice"]]
    records = journal(agent_dir, job["id"])
    events = [r for r in records if r["kind"] == "event"]
    names = [r["event"] for r in events]
    assert names.index("preempted") < names.index("stop_requested")
    (seen,) = [r["data"] for r in events if r["event"] == "preempted"]
    assert seen == final["notice"]
    (stop,) = [r["data"] for r in events if r["event"] == "stop_requested"]
    # the spec's 600 s grace was cut to end MARGIN before the host goes
    assert stop["reason"] == "preempted" and stop["grace"] <= goes_at - seen["seen_at"] - MARGIN
    assert records[-1]["notice"] == final["notice"]


@pytest.mark.parametrize("mode", ["404", "no-token", "garbage", "error"])
def test_a_failing_metadata_service_never_stops_the_job_and_the_watch_goes_on(
    mode: str, fake: FakeMetadata, agent: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    fake.mode = "ok" if mode == "404" else mode
    job = launch(agent, workdir, [sys.executable, "-c", LISTENER], notice={"provider": "aws"})
    wait_for(lambda: "up" in output(agent_dir, job["id"]), what="the job to run")
    # many failed looks (a refused token: many token requests) ...
    wait_for(lambda: len(fake.requests) >= 6, what="the agent to keep looking")
    assert wait_state(agent, job["id"], {"running"})["state"] == "running"
    errors = [r for r in journal(agent_dir, job["id"]) if r.get("event") == "notice_watch_error"]
    assert len(errors) == (0 if mode == "404" else 1)  # reported once, not at every look
    # ... and the watch still sees a notice once the service answers right
    fake.mode = "ok"
    goes_at = fake.serve_notice(seconds=40)
    final = wait_state(agent, job["id"], ENDED)
    assert (final["state"], final["reason"], final["notice"]["time"]) == (
        "stopped",
        "preempted",
        iso(goes_at),
    )


def test_a_job_without_a_provider_notice_is_never_polled(
    fake: FakeMetadata, agent: AgentClient, agent_dir: Path, workdir: Path
) -> None:
    with fake_metadata() as other:
        plain = launch(agent, workdir, [sys.executable, "-c", LISTENER])
        wait_for(lambda: "up" in output(agent_dir, plain["id"]), what="the plain job to run")
        watched = launch(
            agent,
            workdir,
            [sys.executable, "-c", LISTENER],
            notice={"provider": "aws", "metadata_endpoint": other.url},
        )
        # the watched job, launched later, has looked several times: the plain one had as long
        wait_for(lambda: looks(other) >= 5, what="the watched job's looks")
        assert fake.requests == []  # the plain job's supervisor never asked the env var's endpoint
        fake.serve_notice(seconds=40)
        agent.request("stop", job=watched["id"], node="0", timeout=30)
        assert wait_state(agent, plain["id"], {"running"})["state"] == "running"
        assert "notice" not in json.loads((agent_dir / "jobs" / plain["id"] / "0" / "spec.json").read_text())


def test_the_endpoint_is_the_hosts_setting_then_botocores_env_then_the_default() -> None:
    env = {"AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://127.0.0.1:5/"}
    assert endpoint("aws", "http://127.0.0.1:7", env) == "http://127.0.0.1:7/"
    assert endpoint("aws", None, env) == "http://127.0.0.1:5/"
    assert endpoint("aws", None, {"AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE": "IPv6"}) == AWS_ENDPOINT_V6
    assert endpoint("aws", None, {}) == AWS_ENDPOINT
    assert endpoint("aliyun", None, env) == "http://100.100.100.200/"  # botocore's variable is AWS's


def test_notice_times_and_the_grace_they_leave() -> None:
    assert parse_time("2026-12-05T22:30:00Z") == 1796509800.0
    assert parse_time("2026-12-05T23:30:00+01:00") == 1796509800.0
    assert parse_time("2026-12-05T22:30:00.123Z") == 1796509800.0
    for bad in ("soon", "2026-13-45T99:00:00Z", 5, ""):
        with pytest.raises(NoticeError):
            parse_time(bad)
    assert notice_grace(60, notice_at=1120.0, now=1000.0) == 60  # the spec's grace fits
    assert notice_grace(600, notice_at=1120.0, now=1000.0) == 120 - MARGIN
    assert notice_grace(600, notice_at=1010.0, now=1000.0) == 5.0  # little left: half of it
    assert notice_grace(600, notice_at=900.0, now=1000.0) == 0.0  # already past


def test_hosts_toml_gives_the_notice_only_for_a_provider_that_has_one(
    gpudeck_home: Path, workdir: Path
) -> None:
    hosts = gpudeck_home / "hosts.toml"
    hosts.write_text('[hosts.local]\nprovider = "aliyun"\nmetadata_endpoint = "ftp://127.0.0.1:9"\n')
    refused = gpudeck("run", "--", "true", cwd=workdir)
    assert refused.returncode == 2, refused
    assert refused.stderr.strip().endswith(
        f"{hosts}: [hosts.local] metadata_endpoint: expected an http:// address, got 'ftp://127.0.0.1:9'"
    )
    hosts.write_text('[hosts.local]\nprovider = "azure"\n')  # no spot notice of its own: nothing to watch
    ran = gpudeck("run", "--", "true", cwd=workdir)
    assert ran.returncode == 0, ran.stderr
    (spec_file,) = (gpudeck_home / "local-agent" / "jobs" / ran.stdout.strip()).glob("*/spec.json")
    assert "notice" not in json.loads(spec_file.read_text())
