"""`gpudeck export tensorboard`: event files read back by tbparse hold every point `metrics --json` prints."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from tbparse import SummaryReader

from tests.conftest import gpudeck
from tests.support.exporting import GPU, fake_gpu_fixture, ps_all, start_job  # noqa: F401 - fixtures
from tests.support.waiting import wait_for
from tui.export.tensorboard import EventSink, writer_for

POINTS = "; ".join(
    f"echo 'step {i} loss {1 / (i + 1):.6f} lr 0.00{i} samples/sec {100 + i * 7.5}'; sleep 0.05"
    for i in range(1, 21)
)


def f32(value: float) -> float:
    """What a TensorBoard scalar keeps of a value: a 32-bit float."""
    return float(struct.unpack("f", struct.pack("f", value))[0])


def metrics_json(job_id: str, workdir: Path) -> set[tuple[str, int, float]]:
    out = gpudeck("metrics", "--json", job_id, cwd=workdir)
    assert out.returncode == 0, out.stderr
    points = [json.loads(line) for line in out.stdout.splitlines()]
    return {
        (key, int(p["values"]["step"]), f32(v))
        for p in points
        for key, v in p["values"].items()
        if key != "step"
    }


def scalars(directory: Path) -> set[tuple[str, int, float]]:
    frame = SummaryReader(str(directory)).scalars
    return {(str(r.tag), int(r.step), float(r.value)) for r in frame.itertuples() if "gpu" not in str(r.tag)}


@pytest.mark.slow  # a job or a CLI run: seconds
def test_export_reads_back_equal_to_metrics_json(gpudeck_home: Path, workdir: Path, fake_gpu: None) -> None:
    # its GPU (CUDA_VISIBLE_DEVICES) is sampled 2 s in, then every 10 s: the job outlives the first
    job_id = start_job(workdir, POINTS + "; sleep 3", "--env", "CUDA_VISIBLE_DEVICES=0")
    wait_for(
        lambda: [j for j in ps_all(workdir) if j["id"] == job_id and j["ended_at"]],
        timeout=60,
        what="its end",
    )
    out = gpudeck("export", "tensorboard", job_id, str(workdir / "tb"), cwd=workdir)
    assert out.returncode == 0, out.stderr
    expected = metrics_json(job_id, workdir)
    assert len(expected) == 20 * 3  # loss, lr, samples_per_sec at 20 steps
    assert scalars(workdir / "tb") == expected
    frame = SummaryReader(str(workdir / "tb")).scalars
    util = frame[frame.tag == "gpu0/util"]  # the supervisor's GPU samples (one at least: the first)
    assert len(util) >= 1 and set(util.value) == {GPU["util"]}


@pytest.mark.slow  # a job or a CLI run: seconds
def test_follow_writes_until_the_job_ends(gpudeck_home: Path, workdir: Path, fake_gpu: None) -> None:
    # waits for ~/go (at most 60 s): `read < ~/go` did not, as a missing file fails the redirection at
    # once, and a loaded machine's export could then start after the job had ended
    wait_go = "for i in $(seq 1200); do [ -e ~/go ] && break; sleep 0.05; done; "
    job_id = start_job(workdir, "echo 'step 0 loss 9'; " + wait_go + POINTS)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "export", "tensorboard", "--follow", job_id, str(workdir / "tb")],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(
            lambda: (workdir / "tb").is_dir() and scalars(workdir / "tb"), timeout=60, what="the first point"
        )
        assert proc.poll() is None  # the job runs on: so does the export
        Path.home().joinpath("go").touch()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert scalars(workdir / "tb") == metrics_json(job_id, workdir)


@pytest.mark.slow  # a job or a CLI run: seconds
def test_unknown_job_is_one_line(gpudeck_home: Path, workdir: Path) -> None:
    out = gpudeck("export", "tensorboard", "nosuchjob", str(workdir / "tb"), cwd=workdir)
    assert out.returncode == 3 and out.stderr.count("\n") == 1


@pytest.mark.slow  # tensorboardX's writer thread and tbparse's imports: seconds
def test_nodes_gpus_and_resize_markers(tmp_path: Path) -> None:
    sink = EventSink(writer_for(tmp_path))
    sink.write("0", [{"kind": "metric", "t": 100.0, "values": {"step": 5, "loss": 0.5}}])
    sink.write(
        "1",
        [
            {"kind": "state", "t": 100.0, "state": "running"},
            {"kind": "gpu", "t": 112.0, "gpus": [{"index": 3, "util": 40, "mem_used_mib": 2048}]},
            {"kind": "metric", "t": 113.0, "values": {"loss": 0.25}},  # no step: its position
            {"kind": "event", "t": 114.0, "event": "resized", "data": {"from": 2, "to": 3}},
        ],
    )
    sink.close()
    reader = SummaryReader(str(tmp_path))
    got = {(r.tag, int(r.step), float(r.value)) for r in reader.scalars.itertuples()}
    assert got == {
        ("loss", 5, 0.5),
        ("node1/gpu3/util", 12, 40.0),  # seconds since the node's first record
        ("node1/gpu3/mem_used_mib", 12, 2048.0),
        ("node1/loss", 0, 0.25),
    }
    [marker] = list(reader.text.value)
    assert "resized" in marker and "from=2" in marker and "to=3" in marker
