"""One trained checkpoint, shared: ONNX export checked in onnxruntime, and S3 resume on a fresh machine."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

# Slow as a whole: trains, exports ONNX, talks to a moto server: seconds each.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")

from test_trainer import Trainer, events, metrics, run_to_end  # noqa: E402

from tests.support.sshd import free_port  # noqa: E402

STEPS = 12


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint of a short tiny-CNN run (step 12)."""
    d = tmp_path_factory.mktemp("trained")
    run_to_end("--steps", str(STEPS), "--workers", "0", "--checkpoint-dir", str(d), "--run-id", "run1")
    return d / f"ckpt-{STEPS:08d}.pt"


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """A moto S3 server on loopback for this module; tests reset it."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, "moto server did not start"
                time.sleep(0.1)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


@pytest.fixture
def s3(moto_url: str, monkeypatch: pytest.MonkeyPatch):  # -> boto3 S3 client
    boto3 = pytest.importorskip("boto3")
    urllib.request.urlopen(
        urllib.request.Request(moto_url + "/moto-api/reset", method="POST"), timeout=5
    ).close()
    # The trainer subprocess finds these through boto3's standard credential chain.
    for k, v in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3", endpoint_url=moto_url)
    client.create_bucket(Bucket="ckpt")
    return client


@pytest.mark.timeout(90)
def test_export_onnx_matches_torch_with_a_dynamic_batch(trained: Path, tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    out = tmp_path / "model.onnx"
    lines = run_to_end("export", "--checkpoint", str(trained), "--onnx", str(out))
    exported = events(lines, "exported")[0]
    assert exported["step"] == STEPS and exported["max_abs_diff"] <= exported["tolerance"]
    # The bound scales with the outputs: 1e-4 of the largest logit, plus a small floor.
    assert exported["tolerance"] == pytest.approx(1e-4 * exported["output_scale"] + 1e-6)
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]  # weights inside, no .onnx.data

    from trainer.models import build_model, load_plain_state_dict

    model = build_model("tiny", 10)
    load_plain_state_dict(model, torch.load(trained, weights_only=True)["model"])
    model.eval()
    sess = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert not isinstance(sess.get_inputs()[0].shape[0], int)  # the batch dimension is symbolic
    for batch in (1, 7):
        x = torch.randn(batch, 3, 32, 32)
        got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
        torch.testing.assert_close(torch.from_numpy(got), model(x).detach(), rtol=1e-4, atol=1e-4)


@pytest.mark.timeout(90)
def test_fresh_machine_resumes_from_s3_and_uploads_new_checkpoints(
    trained: Path, tmp_path: Path, s3, moto_url: str
) -> None:
    s3.upload_file(str(trained), "ckpt", f"run1/{trained.name}")
    fresh = tmp_path / "fresh"  # a new machine: nothing on its disk
    lines = run_to_end(
        "--steps", str(STEPS + 3), "--workers", "0", "--checkpoint-dir", str(fresh),
        "--checkpoint-uri", "s3://ckpt/run1", "--s3-endpoint", moto_url, "--s3-addressing", "path",
        "--run-id", "run1",
    )  # fmt: skip
    assert events(lines, "checkpoint_downloaded")[0]["step"] == STEPS
    assert events(lines, "resumed")[0]["step"] == STEPS
    assert sorted(metrics(lines)) == [STEPS + 1, STEPS + 2, STEPS + 3]
    up = events(lines, "checkpoint_uploaded")
    assert [u["uri"] for u in up] == [f"s3://ckpt/run1/ckpt-{STEPS + 3:08d}.pt"]
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket="ckpt", Prefix="run1/")["Contents"]]
    assert sorted(keys) == [f"run1/ckpt-{STEPS:08d}.pt", f"run1/ckpt-{STEPS + 3:08d}.pt"]
    back = tmp_path / "back.pt"
    s3.download_file("ckpt", f"run1/ckpt-{STEPS + 3:08d}.pt", str(back))
    assert torch.load(back, weights_only=True)["step"] == STEPS + 3


@pytest.mark.timeout(90)
def test_export_fails_when_onnxruntime_differs_beyond_the_tolerance(trained: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    out = tmp_path / "model.onnx"
    # fp32 in two runtimes sums in other orders (~1e-8 apart here): a bound of 1e-12 must catch it.
    t = Trainer("export", "--checkpoint", str(trained), "--onnx", str(out), "--rtol", "0", "--atol", "1e-12")
    try:
        rc, lines = t.finish(80)
        err = t.stderr()
    finally:
        t.kill()
    assert rc == 1 and not events(lines, "exported")
    (bad,) = events(lines, "export_mismatch")
    assert bad["max_abs_diff"] > bad["tolerance"]
    assert err.strip().splitlines()[-1].startswith("trainer export: onnxruntime differs from torch by "), err
    assert not out.exists()  # no file that computes something else is left behind


@pytest.mark.timeout(90)
def test_a_missing_bucket_is_one_line(tmp_path: Path, s3, moto_url: str) -> None:
    t = Trainer(
        "--steps", "1", "--workers", "0", "--checkpoint-dir", str(tmp_path),
        "--checkpoint-uri", "s3://no-such-bucket/run1", "--s3-endpoint", moto_url, "--s3-addressing", "path",
    )  # fmt: skip
    try:
        rc, lines = t.finish(60)
        err = t.stderr()
    finally:
        t.kill()
    assert rc == 1 and not metrics(lines)
    (line,) = err.strip().splitlines()
    assert (
        line.startswith("trainer: --checkpoint-uri s3://no-such-bucket/run1: ") and "NoSuchBucket" in line
    ), err
