"""Issue 34's own tests of the stacks: a job that stops stepping while it spins a CPU is `stalled`,
and with `--stall-action dump` its supervisor's dump holds the spinning function (the job goes on,
as with notify); `gpudeck dump` of a 2-worker torchrun job (CPU, gloo) names both ranks, by py-spy
and by the faulthandler route."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.jobs import journal
from tests.support.waiting import wait_for
from tests.test_dump import FUNCTION, SPINS

OPT_IN = SPINS.split("import time\n")[0]  # the documented faulthandler opt-in
TORCHRUN_WORKER = OPT_IN + (
    "import time\n"
    "import torch.distributed as dist\n"
    "dist.init_process_group('gloo')\n"
    "for i in range(3):\n"
    "    print(f'step={i} loss=0.5', flush=True)\n"
    "    dist.barrier()\n"
    "def wait_in_a_collective():\n"
    "    while True:\n"
    "        sum(range(1000))\n"
    "wait_in_a_collective()\n"
)


@pytest.mark.slow  # a real job that hangs
@pytest.mark.timeout(120)
def test_a_stalled_job_with_the_dump_action_has_its_stack_saved(
    gpudeck_home: Path, agent_dir: Path, workdir: Path
) -> None:
    job = gpudeck(
        "run", "--name", "hangs", "--stall", "2s", "--stall-action", "dump",
        "--", sys.executable, "-c", SPINS,
        cwd=workdir,
    ).stdout.strip()  # fmt: skip
    try:
        [stalled] = wait_for(
            lambda: [r for r in journal(agent_dir, job) if r.get("event") == "stalled"],
            timeout=60,
            what="stalled",
        )
        assert stalled["data"]["action"] == "dump" and stalled["data"]["why"].startswith("no step for")
        [dumped] = wait_for(
            lambda: [r["data"] for r in journal(agent_dir, job) if r.get("event") == "dumped"],
            timeout=60,
            what="the stall's dump journaled",
        )
        assert dumped["by"] == "stall" and dumped["stacks"] == 1
        assert FUNCTION in Path(dumped["path"]).read_text()
        shown = gpudeck("dump", job, "--show", cwd=workdir)
        assert FUNCTION in shown.stdout and dumped["path"] in shown.stdout
        assert json.loads(gpudeck("ps", "--json", cwd=workdir).stdout)[0]["state"] == "running"  # as notify
        assert f"its stacks: gpudeck dump {job}" in gpudeck("inspect", job, cwd=workdir).stdout
    finally:
        gpudeck("kill", job, cwd=workdir)


@pytest.mark.slow  # torch + two gloo workers
@pytest.mark.timeout(180)
def test_dump_of_a_torchrun_job_names_both_ranks(gpudeck_home: Path, agent_dir: Path, workdir: Path) -> None:
    (workdir / "worker.py").write_text(TORCHRUN_WORKER)
    job = gpudeck(
        "run", "--name", "ddp", "--",
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "worker.py",
        cwd=workdir,
    ).stdout.strip()  # fmt: skip
    try:
        wait_for(
            lambda: (agent_dir / "jobs" / job / "0" / "output.log").read_text().count("step=2") == 2,
            timeout=120,
            what="both workers past their barriers",
        )
        for env, route in (({}, "py-spy"), ({"GPUDECK_PY_SPY": "off"}, "faulthandler")):
            r = gpudeck("dump", job, "--json", cwd=workdir, env=env)
            [node] = json.loads(r.stdout)["nodes"]
            assert node["error"] is None and node["ranks"] == [0, 1], (route, node)
            text = node["text"]
            for rank in (0, 1):
                assert f"=== rank {rank} (local {rank}, group 0) · pid" in text and f"· {route}" in text
            assert text.count("wait_in_a_collective") >= 2, text
            if route == "py-spy":  # torchrun's own agent is Python too, without a rank
                assert "=== no rank" in text and "torch.distributed.run" in text
    finally:
        gpudeck("kill", job, cwd=workdir)
