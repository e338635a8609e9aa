"""The issue's "done when", against the local Aliyun endpoint and a real sshd on 127.0.0.1: the user
finds exactly the idle instance, stops it with one answer, launches a new instance whose address
the provider gives (127.0.0.1, the test sshd's port), and runs a job on it as a gpudeck host.
The host key is trusted because the provider published its fingerprint on the console — and,
without that, not trusted silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.aliyun import AliyunServer, serving
from tests.support.sshd import Sshd, SshHome
from tui.errors import EXIT_HOSTKEY


@pytest.fixture
def aliyun(ssh_home: SshHome, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:  # after ssh_home: HOME and GPUDECK_HOME are the test's own
        yield server


def cloud_init_console(server: Sshd) -> str:
    """What cloud-init prints on an instance's console (ssh-keygen -l lines between its markers)."""
    line = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(server.host_key) + ".pub"], capture_output=True, text=True, check=True
    ).stdout.split()
    return (
        "[   12.3] cloud-init[801]: Cloud-init v. 23.1 running 'modules:final'\n"
        "<14>Dec  1 04:00:00 cloud-init: #############################################################\n"
        "<14>Dec  1 04:00:00 cloud-init: -----BEGIN SSH HOST KEY FINGERPRINTS-----\n"
        f"<14>Dec  1 04:00:00 cloud-init: {line[0]} {line[1]} root@iZbp1 (ED25519)\n"
        "<14>Dec  1 04:00:00 cloud-init: -----END SSH HOST KEY FINGERPRINTS-----\n"
    )


def answering(answers: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui", *args],
        input=answers,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=dict(os.environ),
    )


def launch_args(ssh_home: SshHome, name: str) -> list[str]:
    return [
        "cloud",
        "launch",
        "--provider",
        "aliyun",
        "--type",
        "ecs.gn7i-c8g1.2xlarge",
        "--image",
        "ubuntu_22_04_x64",
        "--name",
        name,
        "--ssh-user",
        "root",
        "--ssh-port",
        str(ssh_home.server.port),
        "--agent-dir",
        str(ssh_home.agent_dir),
        "--timeout",
        "30",
    ]


@pytest.mark.slow
def test_find_idle_stop_it_launch_a_host_and_run_a_job(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    acc = aliyun.account
    now = time.time()
    idle, busy = acc.add(name="forgotten"), acc.add(name="training")
    acc.metrics[idle] = [(now - 60 * k, 1.5) for k in range(60)]
    acc.metrics[busy] = [(now - 60 * k, 93.0) for k in range(60)]

    found = gpudeck("cloud", "idle", "--for", "30m")
    assert found.returncode == 0, found.stderr
    assert idle in found.stdout and busy not in found.stdout and "CNY 10.80/h" in found.stdout

    stopped = answering("y\n", "cloud", "stop", idle)
    assert stopped.returncode == 0, stopped.stderr
    assert acc.status(idle) == "Stopped" and acc.status(busy) == "Running"

    acc.new_console = cloud_init_console(ssh_home.server)
    launched = gpudeck(*launch_args(ssh_home, "gpu1"), "--yes")
    assert launched.returncode == 0, launched.stderr
    assert "published on the instance's console" in launched.stdout
    new_id = next(i for i in acc.instances if i not in (idle, busy))
    run_call = next(c for c in acc.calls if c["Action"] == "RunInstances")
    assert run_call["ClientToken"] and run_call["Tag.1.Key"] == "gpudeck-managed"

    hosts = (ssh_home.gpudeck_home / "hosts.toml").read_text()
    assert f'instance_id = "{new_id}"' in hosts and f'host_key_alias = "{new_id}"' in hosts
    assert f'target = "root@127.0.0.1:{ssh_home.server.port}"' in hosts and 'provider = "aliyun"' in hosts
    # issue 32, item 6: priced as `cloud ls` prices it (Aliyun's DescribePrice), not "unknown"
    prices = json.loads(gpudeck("prices", "--json").stdout)
    gpu1 = next(h for h in prices["hosts"] if h["host"] == "gpu1")
    assert (gpu1["per_hour"], gpu1["currency"]) == (10.8, "CNY"), gpu1
    known = (ssh_home.gpudeck_home / "known_hosts").read_text()
    assert known.startswith(
        f"{new_id} ssh-ed25519 "
    )  # by instance id (bare, as ssh stores a HostKeyAlias), not the address

    job = gpudeck("run", "--host", "gpu1", "--", "echo", "hello from the cloud", cwd=tmp_path)
    assert job.returncode == 0, job.stderr
    logs = gpudeck("logs", "-f", job.stdout.strip(), cwd=tmp_path)
    assert logs.returncode == 0 and logs.stdout.endswith(
        "\nhello from the cloud\n"
    )  # after the test .bashrc's junk

    listed = json.loads(gpudeck("cloud", "ls", "--json").stdout)
    assert {r["id"]: r["gpudeck_host"] for r in listed}[new_id] == "gpu1"


@pytest.mark.slow
def test_a_key_nobody_published_is_not_trusted_silently(
    ssh_home: SshHome, aliyun: AliyunServer, tmp_path: Path
) -> None:
    aliyun.account.new_console = (
        "[    0.0] Linux version 5.15 (no cloud-init fingerprints here)\nSHA256:AAAA not in a block\n"
    )
    launched = gpudeck(*launch_args(ssh_home, "gpu2"), "--yes")  # --yes answers the launch, not the key
    assert launched.returncode == EXIT_HOSTKEY, launched.stderr
    assert "unknown host key" in launched.stderr and "gpudeck hosts trust gpu2" in launched.stderr
    assert (
        not (ssh_home.gpudeck_home / "known_hosts").exists()
        or "gpu" not in (ssh_home.gpudeck_home / "known_hosts").read_text()
    )
    refused = gpudeck("run", "--host", "gpu2", "--", "true", cwd=tmp_path)
    assert refused.returncode == EXIT_HOSTKEY and not ssh_home.agent_dir.exists()
