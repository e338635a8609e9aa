"""The reference trainer on a spot host (hosts.toml provider = "aws", its metadata_endpoint a fake on
127.0.0.1), through the real CLI: the notice makes it checkpoint and upload to its object store, and
the job ends `stopped`, why `preempted`, with the notice's time, before the host goes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the trainer under a real agent, with S3 uploads

torch = pytest.importorskip("torch")

from tests.conftest import gpudeck  # noqa: E402
from tests.support.metadata import fake_metadata, iso  # noqa: E402
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: E402, F401 - fixtures
from tests.support.trainer_runs import TINY, json_lines, ok  # noqa: E402
from tests.support.waiting import wait_for  # noqa: E402


def steps(job: str, cwd: Path) -> int:
    out = gpudeck("metrics", "--json", job, cwd=cwd).stdout
    return max(
        (p["values"]["step"] for p in map(json.loads, out.splitlines()) if "step" in p.get("values", {})),
        default=0,
    )


@pytest.mark.timeout(180)
def test_a_spot_notice_checkpoints_uploads_and_ends_the_trainer_preempted(
    gpudeck_home: Path, workdir: Path, s3: S3
) -> None:
    s3.client.create_bucket(Bucket="ckpts")
    with fake_metadata() as fake:
        (gpudeck_home / "hosts.toml").write_text(
            f'[hosts.local]\nprovider = "aws"\nmetadata_endpoint = "{fake.url}"\n'
        )
        cmd = [
            sys.executable, "-m", "trainer", "--steps", "100000", *TINY, "--checkpoint-dir", "ck",
            "--checkpoint-uri", "s3://ckpts/run", "--s3-endpoint", s3.url,
        ]  # fmt: skip
        job = ok("run", "--name", "spot", "--grace", "600", "--", *cmd, cwd=workdir).strip()
        wait_for(lambda: steps(job, workdir) >= 3, timeout=90, what="3 trained steps")
        goes_at = fake.serve_notice(seconds=90)
        wait_for(
            lambda: json.loads(ok("ps", "--json", "--all", cwd=workdir))[0]["state"] == "stopped",
            timeout=80,
            what="the preempted end",
        )

    (info,) = json.loads(ok("ps", "--json", "--all", cwd=workdir))
    assert (info["state"], info["exit_code"], info["reason"], info["why"]) == (
        "stopped",
        0,
        "preempted",
        "preempted",
    )
    assert info["ended_at"] < goes_at  # within the notice window
    shown = ok("inspect", job, cwd=workdir)
    assert (
        "why: preempted" in shown
        and f"preemption notice: aws terminate, host goes at {iso(goes_at)}" in shown
    )
    lines = json_lines(ok("logs", job, cwd=workdir))
    (told,) = [o for o in lines if o.get("event") == "sigterm"]
    assert told["preempted"]["provider"] == "aws" and told["preempted"]["time"] == iso(goes_at)
    (saved,) = [o for o in lines if o.get("event") == "checkpoint_saved"]
    assert (saved["step"], saved["reason"]) == (told["step"], "preempted")
    uploaded = [o for o in lines if o.get("event") == "checkpoint_uploaded"]
    assert [Path(o["path"]).name for o in uploaded] == [Path(saved["path"]).name]  # the notice's own one
    key = f"run/{Path(saved['path']).name}"
    assert (
        s3.client.head_object(Bucket="ckpts", Key=key)["ContentLength"] == Path(saved["path"]).stat().st_size
    )
