"""Issue 33, supervisors that cost nothing idle: a supervisor gives the C heap's free pages back to
the kernel (memtrim.py: glibc's malloc_trim) once its job is quiet. From source, each module it
imports is compiled, and the compiler's freed memory stays resident in the heap's middle; so does a
burst of output's. Checked in two parts: the trim frees a fragmented heap's pages (a subprocess's
own memory, before and after), and a live supervisor trims when its job goes quiet, after its first
GPU look (NVML's imports), and again when the job goes quiet after printing."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from remote_agent.serving.jobs import JobTable
from tests.support.jobdir import prepared_job, running, start_probed_supervisor
from tests.support.jobs import journal
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[1]
glibc = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")

# 20,000 blocks of 1,000 bytes (malloc'd: above pymalloc's 512), all freed but every 64th: free()
# keeps the holes between the kept ones resident; the trim gives their whole pages back.
_FRAGMENT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from remote_agent.supervision import memtrim
def private_kib():
    with open("/proc/self/smaps_rollup") as f:
        return sum(int(l.split()[1]) for l in f if l.startswith(("Private_Dirty", "Private_Clean")))
blocks = [bytes(1000) for _ in range(20000)]
kept = blocks[::64]
del blocks
before = private_kib()
trimmed = memtrim.trim()
print(json.dumps({"before": before, "after": private_kib(), "trimmed": trimmed}))
"""


@glibc
def test_the_trim_gives_a_fragmented_heap_s_free_pages_back() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _FRAGMENT, str(REPO)], capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert got["trimmed"] is True
    assert got["before"] - got["after"] >= 10 * 1024, got  # of ~19 MiB freed in the heap's middle


# The supervisor as serve starts it, its memtrim.trim counted: each call appends whether NVML's
# probe (the first GPU look) was loaded then.
_PROBE = r"""
import json, os, sys
calls, tree, job_dir = sys.argv[1:4]
sys.path.insert(0, tree)
from remote_agent.supervision import memtrim
real = memtrim.trim
def counted():
    with open(calls, "a") as f:
        f.write(json.dumps("remote_agent.probes.jobgpus" in sys.modules) + "\n")
    return real()
memtrim.trim = counted
from remote_agent.__main__ import main
main(["run", job_dir])
"""


@glibc
def test_a_supervisor_trims_when_its_job_goes_quiet(agent_dir: Path, tmp_path: Path) -> None:
    go = tmp_path / "GO"
    script = f"while [ ! -e {go} ]; do sleep 0.05; done; echo 'step=1 loss=0.5'; exec sleep 600"
    spec, directory = prepared_job(agent_dir, tmp_path, ["sh", "-c", script], heartbeat_interval=0.5)
    calls = tmp_path / "calls"
    proc = start_probed_supervisor(_PROBE, str(calls), str(REPO), str(directory))

    def trims() -> list[bool]:
        return [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []

    try:
        wait_for(lambda: running(agent_dir, spec["id"]), timeout=30, what="the job running")
        # Quiet from its start (nothing printed): a trim then, and one after the first GPU look.
        wait_for(lambda: True in trims(), timeout=60, what="a trim after the first GPU look")
        assert trims()[0] is False  # the first, at its start, before that look
        before = len(trims())
        go.touch()  # one line, then quiet again: another trim once a heartbeat covers it
        wait_for(
            lambda: any(r["kind"] == "metric" for r in journal(agent_dir, spec["id"])),
            timeout=30,
            what="the metric journaled",
        )
        wait_for(lambda: len(trims()) > before, timeout=30, what="a trim after the output went quiet")
    finally:
        JobTable(agent_dir).end(spec["id"], "0", "kill", 0.0)
        proc.wait(timeout=30)
