"""Issue 33, supervisors that cost nothing idle: a real supervisor of a job that prints nothing keeps
only what it uses loaded. What it needs only now and then (a preemption notice over HTTP, a stack
dump, a statistic, the CLI parser, the log parser until a line comes, the typed spec, a container's
or an adopter's modules) is imported when used; this checks the loaded modules of the running
process, as tests/test_layering.py does for the CLI."""

from __future__ import annotations

from pathlib import Path

from remote_agent.serving.jobs import JobTable
from tests.support.jobdir import prepared_job, running, start_probed_supervisor
from tests.support.jobs import journal
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[1]

# What an idle supervisor must not hold: each is hundreds of KiB to MiBs per process, times the
# host's jobs (200 supervisors: 2.3 GiB PSS before issue 33).
HEAVY = {
    "argparse",  # the entry's parser: `run` is parsed by hand (remote_agent/__main__.py)
    "urllib.request",  # preemption notices (preempt/metadata.py), webhooks (notify/send.py)
    "http.client",
    "ssl",
    "email",
    "statistics",  # and its decimal and fractions
    "decimal",
    "fractions",
    "concurrent.futures",  # stack dumps (stacks/take.py)
    "logging",
    "secrets",  # new job ids (names.py)
    "calendar",
    "datetime",
    "platform",  # hello's host info (probes/sysinfo.py)
}
# The agent's own modules it needs only for a line, a kind of job or an event that has not come.
HEAVY_OWN = {
    "remote_agent.metrics.lineparser",  # the log parser and its compiled patterns: the first line
    "remote_agent.metrics.parse",
    "remote_agent.spec",  # the typed spec: spec.json is read as it is (spec_defaults.py)
    "dataclasses",  # (and its inspect)
    "inspect",
    "remote_agent.jobstate",  # an adopter's job state (entry.py picks the kind first)
    "remote_agent.supervision.adopter",
    "remote_agent.supervision.watchjob",
    "remote_agent.slurm",
    "remote_agent.supervision.keeper",  # the keeper's loop: a supervisor only starts one (keeperstart.py)
    "remote_agent.containers.supervised",  # a container job's
    "remote_agent.preempt.watch",  # a host with a provider's notice
    "remote_agent.stacks.take",  # a dump
    "remote_agent.supervision.stall_restart",  # a stall's restart
    "remote_agent.notify.send",  # a notify target
    "remote_agent.tbread.logdir",  # TensorBoard files (a LOGDIR, or a logger's dir once found)
    "remote_agent.loggerfiles.csvread",
    "remote_agent.gpus.leftover",  # the end's check that its GPUs are free
    "remote_agent.advice.gpuhealth",  # a GPU look that found GPUs
}

# The supervisor as serve starts it (launcher.self_command), writing its loaded modules to a file
# each time the test asks (a file appears): the running process's own view, not an import in a test.
_PROBE = r"""
import os, sys, threading, time
ask, out, tree, job_dir = sys.argv[1:5]
def report():
    while True:
        while not os.path.exists(ask):
            time.sleep(0.05)
        os.unlink(ask)
        with open(out + ".tmp", "w") as f:
            f.write("\n".join(sorted(sys.modules)))
        os.rename(out + ".tmp", out)
threading.Thread(target=report, daemon=True).start()
sys.path.insert(0, tree)
from remote_agent.__main__ import main
main(["run", job_dir])
"""


def _loaded(ask: Path, out: Path) -> set[str]:
    out.unlink(missing_ok=True)
    ask.touch()
    wait_for(out.exists, timeout=30, what="the supervisor's module list")
    return set(out.read_text().split())


def test_an_idle_supervisor_keeps_no_heavy_module_loaded(agent_dir: Path, tmp_path: Path) -> None:
    # Silent until told to print one metric line, then silent again.
    go = tmp_path / "GO"
    script = f"while [ ! -e {go} ]; do sleep 0.05; done; echo 'step=1 loss=0.5'; exec sleep 600"
    spec, directory = prepared_job(agent_dir, tmp_path, ["sh", "-c", script])
    ask, out = tmp_path / "ask", tmp_path / "modules"
    proc = start_probed_supervisor(_PROBE, str(ask), str(out), str(REPO), str(directory))
    try:
        wait_for(lambda: running(agent_dir, spec["id"]), timeout=30, what="the job running")

        # Past its first look at the GPUs (2 s in): what it holds from then on while the job is quiet.
        def after_gpu_look() -> set[str] | None:
            mods = _loaded(ask, out)
            return mods if "remote_agent.probes.jobgpus" in mods else None

        loaded = wait_for(after_gpu_look, timeout=60, what="the supervisor's first GPU look")
        assert "remote_agent.supervision.supervisor" in loaded  # it is the supervisor we looked at
        assert sorted(HEAVY & loaded) == []
        assert sorted(HEAVY_OWN & loaded) == []
        # The first line brings the parser, and its metric is journaled as before.
        go.touch()
        wait_for(
            lambda: any(r.get("kind") == "metric" for r in journal(agent_dir, spec["id"])),
            timeout=30,
            what="the metric journaled",
        )
        metrics = [r["values"] for r in journal(agent_dir, spec["id"]) if r.get("kind") == "metric"]
        assert metrics == [{"step": 1, "loss": 0.5}]
        assert "remote_agent.metrics.lineparser" in _loaded(ask, out)
    finally:
        JobTable(agent_dir).end(spec["id"], "0", "kill", 0.0)
        proc.wait(timeout=30)
