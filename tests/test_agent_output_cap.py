"""The per-job output cap (#11, finding 12): output.log keeps its head and its tail, the parsed
middle is dropped (its disk blocks freed), and `logs` / `logs -f` say so where the gap is."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.waiting import wait_for

MARKER_TEXT = "bytes of output dropped here by the output cap]"
# ~6.8 MB of metric lines, then (once argv[2] exists) one last line.
LOUD = (
    "import os, sys, time\npad = 'x' * 200\n"
    "for i in range(30000):\n    sys.stdout.write('step=%d loss=%.6f %s\\n' % (i, 1.0 / (i + 1), pad))\n"
    "sys.stdout.flush()\n"
    "while not os.path.exists(sys.argv[2]):\n    time.sleep(0.02)\n"
    "print('the last line', flush=True)\n"
)


def drops(agent_dir: Path, job_id: str) -> list[dict]:
    """output_dropped records, from whole lines only (the supervisor may be mid-write)."""
    raw = (agent_dir / "jobs" / job_id / "0" / "events.jsonl").read_bytes()
    records = [json.loads(line) for line in raw[: raw.rfind(b"\n") + 1].splitlines()]
    return [r for r in records if r.get("event") == "output_dropped"]


@pytest.mark.slow
def test_output_cap_keeps_head_and_tail_and_logs_show_the_gap(gpudeck_home: Path, workdir: Path) -> None:
    agent_dir = gpudeck_home / "local-agent"
    go = workdir / f"go-{uuid.uuid4().hex}"
    run = gpudeck("run", "--output-cap", "1M", "--", sys.executable, "-c", LOUD, "cap", str(go), cwd=workdir)
    assert run.returncode == 0, run.stderr
    job_id = run.stdout.strip()
    # Dropped while it runs (heartbeats every 10 s mark what is parsed: wait for one past the lines).
    wait_for(lambda: drops(agent_dir, job_id), timeout=60, what="the middle dropped while the job runs")
    follower = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id],
        cwd=workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: drops(agent_dir, job_id)[-1]["data"]["to"] > 0, what="a drop")
        go.touch()
        followed, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0, err
    printed = gpudeck("logs", job_id, cwd=workdir)
    assert printed.returncode == 0, printed.stderr
    for text in (followed.decode(), printed.stdout):
        assert text.startswith("step=0 loss=1.000000 ") and text.rstrip().endswith("the last line")
        assert text.count(MARKER_TEXT) == 1 and "\0" not in text
    last = drops(agent_dir, job_id)[-1]["data"]
    assert f"[gpudeck: {last['to'] - last['from']} {MARKER_TEXT}" in printed.stdout
    output = agent_dir / "jobs" / job_id / "0" / "output.log"
    assert output.stat().st_size > 6_000_000  # offsets never move: the hole keeps its place
    assert output.stat().st_blocks * 512 <= (1 << 20) + (1 << 20) + 16384  # cap + one punch step
    # Only parsed bytes were dropped: every metric line is in the journal.
    steps = [r["values"]["step"] for r in journal(agent_dir, job_id) if r["kind"] == "metric"]
    assert steps == list(range(30000))
    shown = json.loads(gpudeck("inspect", job_id, "--json", cwd=workdir).stdout)
    assert shown["output_dropped"] == last["to"] - last["from"] and shown["state"] == "exited"
    assert (
        f"output dropped by the output cap: {last['to'] - last['from']:,} bytes"
        in gpudeck("inspect", job_id, cwd=workdir).stdout
    )


def test_output_cap_values(gpudeck_home: Path, workdir: Path) -> None:
    from remote_agent.supervision.jobspec import SpecError, validate_spec
    from tui.actions.launch import build_spec
    from tui.actions.options import LaunchOptions, check
    from tui.errors import GpudeckError

    opts = LaunchOptions(argv=("true",), workdir=str(workdir))
    assert build_spec(None, opts, "20261201-000000-aaaaaa").output_cap == 1 << 30  # the spec's default
    (gpudeck_home / "hosts.toml").write_text('[hosts.local]\noutput_cap = "2M"\n')
    assert build_spec(None, opts, "20261201-000000-aaaaaa").output_cap == 2 << 20
    for given, want in (("500M", 500 << 20), ("1.5G", 3 << 29), ("off", 0), ("1048576", 1 << 20)):
        assert (
            build_spec(
                None,
                LaunchOptions(argv=("true",), workdir=str(workdir), output_cap=given),
                "20261201-000000-aaaaaa",
            ).output_cap
            == want
        )
    (gpudeck_home / "hosts.toml").write_text('[hosts.local]\noutput_cap = "lots"\n')
    with pytest.raises(GpudeckError, match=r"hosts.toml: \[hosts.local\] output_cap 'lots'"):
        build_spec(None, opts, "20261201-000000-aaaaaa")
    with pytest.raises(GpudeckError, match=r"--output-cap '10K': a size of at least 1M") as refused:
        check(LaunchOptions(argv=("true",), output_cap="10K"))  # before any host is asked
    assert refused.value.code == 2
    base = {"id": "20261201-000000-aaaaaa", "name": "x", "argv": ["true"], "workdir": str(workdir)}
    assert validate_spec(base)["output_cap"] == 1 << 30
    for cap in (5, -1, 1.5, True, "1G"):
        with pytest.raises(SpecError, match="spec.output_cap"):
            validate_spec(dict(base, output_cap=cap))
