"""README's spot-training walk-through, run as a user types it: two spot instances from `cloud launch`
(the local Aliyun endpoint, whose instances are the test sshd on 127.0.0.1; their host keys trusted
by the fingerprints the console published), the reference trainer as a managed job with its code
synced and its checkpoints in an object store (moto S3), a spot notice on the first instance (a fake
metadata service), and the detached controller bringing it back on the second from the checkpoint:
one chain in `ps`/`inspect`, one chart in `metrics --chain`, one cost in `cost`.

GPUDECK_WALKTHROUGH=FILE writes each command and what it printed to FILE (the README's text)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two launches, the trainer under two agents, a recovery: ~2-3 min
torch = pytest.importorskip("torch")

from tests.conftest import gpudeck  # noqa: E402
from tests.support.aliyun import AliyunServer, serving  # noqa: E402
from tests.support.cleanup import kill_all_jobs  # noqa: E402
from tests.support.metadata import fake_metadata  # noqa: E402
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: E402, F401 - fixtures
from tests.support.sshd import SshHome  # noqa: E402
from tests.support.trainer_runs import TINY  # noqa: E402
from tests.support.waiting import wait_for  # noqa: E402
from tests.test_cloud_launch import cloud_init_console  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def aliyun(ssh_home: SshHome, s3: S3, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:  # after ssh_home and s3: their env stays, the cloud is Aliyun's
        yield server


class Transcript:
    def __init__(self, cwd: Path) -> None:
        self.cwd, self.parts = cwd, []

    def __call__(self, *args: str, timeout: float = 180, shown: str | None = None) -> str:
        r = gpudeck(*args, cwd=self.cwd, timeout=timeout)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        self.parts.append(f"$ {shown or 'gpudeck ' + ' '.join(args)}\n{r.stdout}{r.stderr}")
        return r.stdout

    def save(self) -> None:
        out = os.environ.get("GPUDECK_WALKTHROUGH")
        if out:
            Path(out).write_text("\n".join(self.parts))


def steps(job: str, cwd: Path) -> list[tuple[str, int]]:
    out = gpudeck("metrics", "--json", "--chain", job, cwd=cwd).stdout
    points = [json.loads(x) for x in out.splitlines() if x.strip()]
    return [(p.get("job"), p["values"]["step"]) for p in points if "step" in p.get("values", {})]


def ps(cwd: Path) -> list[dict]:
    return json.loads(gpudeck("ps", "--json", "--all", cwd=cwd).stdout or "[]")


@pytest.mark.timeout(600)
def test_spot_walkthrough_from_cloud_launch_to_a_recovered_run(
    ssh_home: SshHome, aliyun: AliyunServer, s3: S3, tmp_path: Path
) -> None:
    s3.client.create_bucket(Bucket="ckpts")
    aliyun.account.new_console = cloud_init_console(ssh_home.server)
    # The instances' image has Python with torch on its PATH.
    with (ssh_home.server.remote_home / ".profile").open("a") as f:
        f.write(f"export PATH={Path(sys.executable).parent}:$PATH\n")
    project = tmp_path / "project"  # the user's project: the trainer's code, synced to each host
    shutil.copytree(REPO / "trainer", project / "trainer", ignore=shutil.ignore_patterns("__pycache__"))
    say = Transcript(project)
    agents = {n: tmp_path / f"agent-{n}" for n in ("spot1", "spot2")}
    with fake_metadata() as meta1, fake_metadata() as meta2:
        try:
            for name in agents:
                say(
                    "cloud", "launch", "--provider", "aliyun", "--type", "ecs.gn7i-c8g1.2xlarge",
                    "--image", "ubuntu_22_04_x64", "--spot", "--name", name, "--ssh-user", "root",
                    "--ssh-port", str(ssh_home.server.port), "--agent-dir", str(agents[name]), "--yes",
                )  # fmt: skip
            (ssh_home.gpudeck_home / "config.toml").write_text('[cost]\ncurrency = "CNY"\n')  # Aliyun's
            # Only with the fakes: each instance's metadata service is a fake on 127.0.0.1.
            for name, meta in (("spot1", meta1), ("spot2", meta2)):
                hosts = ssh_home.gpudeck_home / "hosts.toml"
                hosts.write_text(
                    hosts.read_text().replace(
                        f"[hosts.{name}]\n", f'[hosts.{name}]\nmetadata_endpoint = "{meta.url}"\n'
                    )
                )
            first = say(
                "run", "--managed", "--name", "demo", "--host", "spot1", "--fallback", "spot2", "--sync",
                "--env", "AWS_ACCESS_KEY_ID", "--env", "AWS_SECRET_ACCESS_KEY", "--",
                "python", "-m", "trainer", "--steps", "100000", *TINY, "--checkpoint-dir", "ck",
                "--checkpoint-uri", "s3://ckpts/demo", "--s3-endpoint", s3.url,
            ).strip().splitlines()[-1]  # fmt: skip
            wait_for(lambda: len(steps(first, project)) >= 5, timeout=180, what="5 trained steps")
            say("ps")

            meta1.serve_notice(seconds=90)  # AWS/Aliyun take the instance: its notice is out
            wait_for(
                lambda: any(
                    j["id"] != first and j["name"] == "demo" and j["state"] == "running" for j in ps(project)
                ),
                timeout=240,
                what="the recovered job running on spot2",
            )
            [new] = [j["id"] for j in ps(project) if j["id"] != first and j["name"] == "demo"]
            wait_for(
                lambda: any(j == new for j, _ in steps(new, project)), timeout=180, what="its first step"
            )
            say("ps", "--all")
            shown = say("inspect", new)
            assert f"recovered {first} on spot1 → {new} on spot2: preempted" in shown
            chart = steps(new, project)
            old_last = max(s for j, s in chart if j == first)
            new_first = min(s for j, s in chart if j == new)
            assert 1 < new_first <= old_last + 1  # resumed from the notice's checkpoint, not from step 1
            text = say("metrics", "--chain", new)
            lines = say.parts[-1].splitlines()  # the README shows the start and where the chain goes on
            at = next(i for i, x in enumerate(lines) if x.startswith(f"-- job {new}"))
            say.parts[-1] = "\n".join([*lines[:3], "…", *lines[at - 2 : at + 3], "…"]) + "\n"
            assert f"-- job {first}" in text and f"-- job {new}" in text
            cost = say("cost")
            assert f"chain demo ({first}): 2 jobs, CNY " in cost and "recovery: 1 recovery, CNY " in cost
        finally:
            say.save()
            gpudeck("kill", "policy", cwd=project)
            for d in agents.values():
                kill_all_jobs(d)
