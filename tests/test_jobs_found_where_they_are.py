"""Issue 33, "jobs found where they are": a verb naming a job is sent where state.db says the job is.
Eight SSH hosts (one real sshd, eight aliases, each reached through a ProxyCommand that marks every
connection made to it): `logs`, `inspect` and `stop` of a job on one of them open no connection to
the other seven. A job state.db does not know (launched by another client) is still found."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.cleanup import kill_all_jobs
from tests.support.sshd import SshHome
from tests.support.waiting import wait_for

RELAY = Path(__file__).parent / "support" / "relay.py"
HOSTS = [f"h{i}" for i in range(8)]


def eight_hosts(ssh_home: SshHome, marks: Path) -> None:
    marks.mkdir()
    ssh_home.write_ssh_config(
        "".join(
            f"Host {h}\n  HostName 127.0.0.1\n  Port {ssh_home.server.port}\n  User root\n"
            f"  ProxyCommand {sys.executable} {RELAY} %h %p {marks / h}\n"
            for h in HOSTS
        )
    )
    ssh_home.trust()
    for h in HOSTS:
        ssh_home.add_host(h, h, agent_dir=str(ssh_home.agent_dir / h))


def connected(marks: Path) -> set[str]:
    return {p.name for p in marks.iterdir()}


def clear(marks: Path) -> None:
    for p in marks.iterdir():
        p.unlink()


@pytest.mark.slow  # eight hosts' agents deployed
@pytest.mark.timeout(240)
def test_a_verb_naming_a_job_on_one_of_8_hosts_connects_to_that_host_only(
    ssh_home: SshHome, tmp_path: Path
) -> None:
    marks = tmp_path / "marks"
    eight_hosts(ssh_home, marks)
    try:
        job = gpudeck("run", "--host", "h3", "--", "sh", "-c", "echo ready; exec sleep 300", cwd=tmp_path)
        assert job.returncode == 0, job.stderr
        job_id = job.stdout.strip()
        wait_for(lambda: "ready" in gpudeck("logs", job_id, cwd=tmp_path).stdout, what="its output")
        for verb in (
            ["logs", job_id],
            ["inspect", job_id],
            ["logs", job_id[:12]],
            ["stop", job_id, "--grace", "1"],
        ):
            clear(marks)
            r = gpudeck(*verb, cwd=tmp_path)
            assert r.returncode == 0, (verb, r.stderr)
            assert connected(marks) == {"h3"}, verb  # before: all eight hosts, for every verb
    finally:
        for h in HOSTS:
            kill_all_jobs(ssh_home.agent_dir / h)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_job_state_db_does_not_know_is_found_on_every_host(ssh_home: SshHome, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    eight_hosts(ssh_home, marks)
    try:
        job_id = gpudeck(
            "run", "--host", "h5", "--name", "elsewhere", "--", "true", cwd=tmp_path
        ).stdout.strip()
        (ssh_home.gpudeck_home / "state.db").unlink()  # another client launched it, as far as we know
        wait_for(lambda: gpudeck("inspect", "elsewhere", cwd=tmp_path).returncode == 0, what="found by name")
        assert job_id in gpudeck("inspect", "elsewhere", cwd=tmp_path).stdout
    finally:
        for h in HOSTS:
            kill_all_jobs(ssh_home.agent_dir / h)
