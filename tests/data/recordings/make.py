"""Regenerate `session.jsonl`: a real, short app session recorded as `gpudeck --record` records it.

    python tests/data/recordings/make.py [OUT]

The app runs headless against the real local agent (NVML faked at its import boundary, two H100s,
as in tests/test_agent_gpu.py), in a throwaway GPUDECK_HOME. It launches a small training loop that
prints JSON loss lines and exits 0, and a job that fails with a CUDA OOM, opens the first one's job
view, and quits once both are over. The launch carries an env secret, so the file shows redaction.
Snapshots change when this is regenerated: rerun `pytest tests/test_tui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
OUT = Path(__file__).resolve().parent / "session.jsonl"
MIB = 1024 * 1024
GPUS = [
    {
        "uuid": "GPU-11111111-2222-3333-4444-555555555555",
        "name": "NVIDIA H100 80GB HBM3",
        "util": 93,
        "mem_used": 61_440 * MIB,
        "temp": 68,
        "power_mw": 610_000,
    },
    {
        "uuid": "GPU-66666666-7777-8888-9999-000000000000",
        "name": "NVIDIA H100 80GB HBM3",
        "util": 4,
        "mem_used": 1024 * MIB,
        "temp": 37,
        "power_mw": 72_000,
    },
]
TRAIN = """\
import json, math, time
for step in range(1, 61):
    loss = 2.5 * math.exp(-step / 18) + 0.15
    line = {"step": step, "loss": round(loss, 4), "total_steps": 60, "samples_per_s": 512.0}
    if step % 10 == 0:
        line["val_loss"] = round(loss + 0.08, 4)
    print(json.dumps(line), flush=True)
    time.sleep(0.07)
"""
OOM = "import sys; print('step 1'); sys.exit('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB')"


def _environment(tmp: Path) -> Path:
    home, user, work = tmp / "home", tmp / "user", tmp / "work"
    for d in (home, user, work):
        d.mkdir()
    (user / ".profile").write_text("true\n")  # jobs run under bash -l: no slow profile of this machine's
    os.environ.update(GPUDECK_HOME=str(home), HOME=str(user), PYNVML_FAKE=json.dumps(GPUS))
    fake = str(ROOT / "tests" / "fakes" / "nvml")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (fake, str(ROOT), os.environ.get("PYTHONPATH")) if p
    )
    (work / "train.py").write_text(TRAIN)
    os.chdir(work)
    return work


async def _until(pilot: object, cond: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if cond():
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise SystemExit(f"make.py: timed out waiting for {what}")


async def _session(work: Path) -> None:
    from remote_agent.names import new_job_id
    from tui.actions.launch import build_spec
    from tui.actions.options import form_options
    from tui.app import GpuDeckApp
    from tui.screens.job import JobScreen

    def form_spec(host: str, command: str, **fields: str) -> dict:
        return build_spec(None, form_options(host, command, **fields), new_job_id()).to_wire()

    app = GpuDeckApp(hosts=["local"], store=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: app.fleet.hosts["local"].up and app.fleet.hosts["local"].gpus, "local up")
        py = shlex.quote(sys.executable)
        train = form_spec(
            "local",
            f"{py} train.py",
            name="resnet-demo",
            workdir=str(work),
            env="CUDA_VISIBLE_DEVICES=0 WANDB_API_KEY=recorded-secret-value",
        )
        train["gpu_interval"] = 0.5  # the job's own GPU samples, so its usage chart has points
        app.job_control.in_thread(
            lambda: app.connections.request("local", "launch", spec=train), group="action"
        )
        await _until(
            pilot, lambda: train["id"] in app.fleet.jobs and app.fleet.jobs[train["id"]].active, "running"
        )
        app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, train["id"]))
        oom = form_spec(
            "local",
            f"{py} -c {shlex.quote(OOM)}",
            name="llama-ft",
            workdir=str(work),
            env="CUDA_VISIBLE_DEVICES=1",
        )
        app.job_control.in_thread(
            lambda: app.connections.request("local", "launch", spec=oom), group="action"
        )
        jobs = app.fleet.jobs
        await _until(
            pilot,
            lambda: all(i in jobs and not jobs[i].active for i in (train["id"], oom["id"])),
            "both over",
        )
        polls = app.fleet.hosts["local"].last_update
        await _until(pilot, lambda: app.fleet.hosts["local"].last_update != polls, "one more poll")
        await pilot.pause(2.5)  # a last jobs poll and log read see both final states


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    sys.path.insert(0, str(ROOT))
    from tui import session
    from tui.remote.recording import Recorder

    with tempfile.TemporaryDirectory(prefix="gpudeck-rec-") as tmp:
        work = _environment(Path(tmp))
        session.recorder = Recorder(out)
        try:
            asyncio.run(_session(work))
        finally:
            session.recorder.close()
            session.recorder = None
            from tests.support.cleanup import kill_all_jobs

            kill_all_jobs(Path(tmp) / "home" / "local-agent")
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
