"""The trainer under faults and surprises: every way out ends the process with its cause, and a run
never silently does nothing (issue 11, finding 14)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# Slow as a whole: each test starts torch in a subprocess.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

from test_trainer import ROOT, Trainer, events, metrics, run_to_end  # noqa: E402


def ended(t: Trainer, timeout: float = 45.0) -> tuple[int, list[dict], str]:
    """The trainer's exit code, lines and stderr; a trainer still alive after `timeout` fails the test
    (the hang this file is about) instead of hanging it."""
    try:
        rc, lines = t.finish(timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the trainer hangs; stderr so far:\n{t.stderr()}") from None
    finally:
        t.kill()
    return rc, lines, t.stderr()


@pytest.mark.timeout(90)
def test_a_failing_checkpoint_save_with_workers_ends_the_process_with_its_cause() -> None:
    # /proc refuses new directories: the first save fails while 2 DataLoader workers are running.
    t = Trainer("--steps", "2", "--workers", "2", "--checkpoint-dir", "/proc/nope")
    rc, lines, err = ended(t)
    assert rc != 0 and sorted(metrics(lines)) == [1, 2]
    last = err.strip().splitlines()[-1]
    assert last.startswith("trainer: could not save the checkpoint of step 2 to /proc/nope/"), err
    assert "No such file or directory" in last and "Traceback" not in err


@pytest.mark.timeout(90)
def test_a_closed_stdout_ends_the_run_instead_of_hanging(tmp_path: Path) -> None:
    """`python -m trainer ... | head -3`: the reader leaves, the trainer (with workers) must follow."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = f"{sys.executable} -m trainer --steps 100000 --workers 2 --checkpoint-dir ck | head -3"
    proc = subprocess.Popen(
        ["bash", "-c", "set -o pipefail; " + cmd],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError("the trainer hangs after its stdout was closed") from None
    assert len(out.splitlines()) == 3
    assert proc.returncode != 0  # pipefail: the trainer's own exit code, not head's
    assert err.strip().splitlines() == [
        "trainer: stdout was closed (broken pipe): stopping, nothing more can be reported"
    ], err


@pytest.mark.timeout(120)
def test_resuming_is_limited_to_the_same_run_or_explicit(tmp_path: Path) -> None:
    ck = str(tmp_path)
    first = run_to_end("--steps", "4", "--workers", "0", "--checkpoint-dir", ck, "--run-id", "a")
    assert events(first, "done")[0]["run_id"] == "a"
    # A plain run in the same directory is a new run: it trains from step 1, and says what it left alone.
    fresh = run_to_end("--steps", "2", "--workers", "0", "--checkpoint-dir", ck)
    assert sorted(metrics(fresh)) == [1, 2] and not events(fresh, "resumed")
    (ignored,) = events(fresh, "checkpoint_ignored")
    assert (ignored["step"], ignored["run_id"]) == (4, "a") and ignored["this_run"].startswith("run-")
    # gpudeck's job name is the run id: a restart (same name) resumes its own checkpoint, not the newer
    # file of the other run; and the other run's checkpoints survive this one's pruning.
    env_run = run_to_end(
        "--steps", "6", "--workers", "0", "--checkpoint-dir", ck, "--run-id", "a", "--keep", "1"
    )
    assert events(env_run, "resumed")[0]["step"] == 4 and sorted(metrics(env_run)) == [5, 6]
    assert (tmp_path / "ckpt-00000002.pt").exists()  # the plain run's, kept by --keep 1 of run a
    assert not (tmp_path / "ckpt-00000004.pt").exists()  # run a's older one, pruned
    # --resume continues the newest checkpoint whoever wrote it.
    explicit = run_to_end("--steps", "7", "--workers", "0", "--checkpoint-dir", ck, "--resume")
    assert events(explicit, "resumed")[0]["step"] == 6 and events(explicit, "resumed")[0]["from_run"] == "a"
    assert sorted(metrics(explicit)) == [7]


@pytest.mark.timeout(90)
def test_gpudeck_job_name_is_the_run_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDECK_JOB_NAME", "tiny")
    run_to_end("--steps", "2", "--workers", "0", "--checkpoint-dir", str(tmp_path))
    again = run_to_end("--steps", "3", "--workers", "0", "--checkpoint-dir", str(tmp_path))
    assert events(again, "resumed")[0]["step"] == 2 and events(again, "resumed")[0]["run_id"] == "tiny"


@pytest.mark.timeout(90)
def test_a_checkpoint_at_or_past_steps_is_reported_not_success(tmp_path: Path) -> None:
    run_to_end("--steps", "3", "--workers", "0", "--checkpoint-dir", str(tmp_path), "--run-id", "r")
    t = Trainer("--steps", "2", "--workers", "0", "--checkpoint-dir", str(tmp_path), "--run-id", "r")
    rc, lines, err = ended(t)
    assert rc != 0 and not metrics(lines) and not events(lines, "done")
    assert events(lines, "nothing_to_train")[0] == {"event": "nothing_to_train", "step": 3, "total_steps": 2}
    assert err.strip().splitlines() == [
        f"trainer: the checkpoint in {tmp_path} is at step 3, already at or past --steps 2: nothing to "
        "train (raise --steps, or --no-resume to start over)"
    ], err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", ["missing", "garbage"])
def test_a_bad_pretrained_file_is_one_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / "weights.pt"
    if case == "garbage":
        path.write_bytes(b"not a torch file")
    t = Trainer(
        "--steps", "1", "--workers", "0", "--checkpoint-dir", str(tmp_path), "--pretrained", str(path)
    )
    rc, lines, err = ended(t)
    assert rc == 1 and not lines
    (line,) = err.strip().splitlines()
    want = "no such file" if case == "missing" else "cannot load it: "
    assert line.startswith(f"trainer: --pretrained {path}: {want}"), err


@pytest.mark.timeout(60)
def test_an_unreachable_s3_endpoint_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("boto3")
    for k, v in {
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(k, v)
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = Trainer(
        "--steps", "1", "--workers", "0", "--checkpoint-dir", str(tmp_path),
        "--checkpoint-uri", "s3://nobucket/run", "--s3-endpoint", f"http://127.0.0.1:{port}",
    )  # fmt: skip
    rc, lines, err = ended(t, 60)
    assert rc == 1 and not metrics(lines)
    (line,) = err.strip().splitlines()
    assert line.startswith("trainer: --checkpoint-uri s3://nobucket/run: Could not connect"), err
