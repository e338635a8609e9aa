"""An advice is told to the job's notify targets from the host, with no gpudeck running, when the
job asked for `advice` (it is opt-in: the default events leave it out)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.receiver import PostReceiver
from tests.support.waiting import wait_for


@pytest.mark.slow  # a job through the CLI and a message over HTTP: ~3 s
@pytest.mark.timeout(90)
def test_an_oom_advice_reaches_a_json_receiver(gpudeck_home: Path, workdir: Path) -> None:
    receiver = PostReceiver()
    (gpudeck_home / "config.toml").write_text(
        f'[notify]\nurls = ["json://127.0.0.1:{receiver.port}/hook"]\nevents = ["advice"]\n'
    )
    script = 'echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB"; exit 1'
    try:
        run = gpudeck(
            "run", "--name", "oom", "--", "bash", "-c", script, "x", "--batch-size", "48", cwd=workdir
        )
        assert run.returncode == 0, run.stderr
        job = run.stdout.strip()
        wait_for(lambda: receiver.got, timeout=60, interval=0.2, what="the message")
        [(path, body)] = receiver.got  # advice only: `failed` was not asked for
        message = json.loads(body)
        assert (message["event"], message["job"]) == ("advice", job)
        assert message["why"] == "CUDA out of memory at batch 48"
    finally:
        receiver.close()
