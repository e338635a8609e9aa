"""NCCL advice on a real 2-node job (both nodes on `local`, --launcher none): node 1 prints the
NCCL WARN lines of a real failure (NVIDIA/nccl-tests#252), node 0 later the watchdog timeout
(XPixelGroup/BasicSR#737); the job's advice is one NCCL finding that names node 1 first, with the
seeds' variables, in `ps --json` and `inspect`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.node_journals import events, final, records
from tests.support.waiting import wait_for

DATA = Path(__file__).parent / "data" / "nccl"

# Each node prints its file's lines; node 0 only once node 1's supervisor has journaled its advice
# (so which came first is known, not raced), node 1 stays until node 0 has printed too.
NODE = """
import json, os, pathlib, sys, time
rank = os.environ["GPUDECK_NODE_RANK"]
here = pathlib.Path(os.environ["GPUDECK_JOB_DIR"])
def said(node):
    try:
        text = (here.parent / node / "events.jsonl").read_text()
    except OSError:
        return False
    return '"advice"' in text
def wait(node):
    deadline = time.monotonic() + 60
    while not said(node) and time.monotonic() < deadline:
        time.sleep(0.05)
if rank == "0":
    wait("1")
for line in open(sys.argv[1 + int(rank)]):
    if not line.startswith("#"):
        print(line, end="", flush=True)
if rank == "1":
    wait("0")
sys.exit(1)
"""


@pytest.mark.slow  # a 2-node job through the CLI: ~10 s
@pytest.mark.timeout(120)
def test_nccl_lines_give_the_nccl_advice_naming_the_node_that_printed_first(
    agent_dir: Path, workdir: Path
) -> None:
    (workdir / "node.py").write_text(NODE)
    run = gpudeck(
        "run", "--name", "n2", "--nodes", "2", "--launcher", "none", "--",
        sys.executable, "node.py", str(DATA / "watchdog_timeout.log"), str(DATA / "net_ib_warn.log"),
        cwd=workdir,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    job = run.stdout.strip()
    wait_for(lambda: all(final(records(agent_dir, job, n)) for n in "01"), timeout=90, what="both ends")
    [one] = [e["data"] for e in events(records(agent_dir, job, "1"), "advice")]
    [zero] = [e["data"] for e in events(records(agent_dir, job, "0"), "advice")]
    assert one["evidence"]["line"].startswith("kolyoz2:25146:25854 [0] ib_plugin.c:1105 NCCL WARN NET/IB")
    assert "Watchdog caught collective operation timeout" in zero["evidence"]["line"]
    listed = gpudeck("ps", "--json", "--all", cwd=workdir)
    [obj] = [j for j in json.loads(listed.stdout) if j["id"] == job]
    [advice] = obj["advice"]
    assert (advice["kind"], advice["node"], advice["nodes"]) == ("nccl", "1", ["0", "1"])
    inspect = gpudeck("inspect", job, cwd=workdir)
    assert inspect.returncode == 0, inspect.stderr
    text = inspect.stdout
    assert "advice, NCCL error (node 1 first of 0, 1): NCCL error on node 1" in text
    for variable in ("NCCL_DEBUG=INFO", "NCCL_SOCKET_IFNAME=", "NCCL_IB_DISABLE=1", "under 2 ms"):
        assert variable in text, text
