"""Pictures of a GPU fleet for the README, from a generated recording played through the replay
transport (tui/remote/replay.py): no GPU, no agent and no network needed.

    python docs/gpu_fleet.py             # writes docs/gpu-fleet.jsonl and docs/screenshot-gpu-*.svg
    gpudeck --replay docs/gpu-fleet.jsonl  # the same fleet, to look around in

The fleet: 3 hosts × 8 H100 80GB — `h100-a` and `h100-b` run a two-node fine-tune (torchrun, 8
workers per node), `h100-spot` (a spot instance) runs a pretraining job on 7 of its GPUs and has one
idle. Three hours of journal (loss, validation loss, GPU samples), the hosts' last five minutes of
1 Hz GPU readings (the sparklines), each node's process tree (the process view) and an output tail.
The numbers are made up but shaped like real runs (a seeded RNG: the same file every time).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import sys
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent))

RECORDING = DOCS / "gpu-fleet.jsonl"
SIZE = (160, 58)  # tall enough for the three hosts
GPU_NAME = "NVIDIA H100 80GB HBM3"
MEM_TOTAL = 81559
HOST_NOW = 1_796_040_000.0  # the hosts' clock when the recording "was made"
GIB = 1 << 30


class Tape:
    """Recording lines in the `--record` format: one connection per host, answers after requests."""

    def __init__(self) -> None:
        self.lines: list[tuple[float, int, dict[str, Any]]] = []
        self.ids: dict[str, int] = {}

    def add(self, t: float, entry: dict[str, Any]) -> None:
        self.lines.append((t, len(self.lines), {"t": round(t, 4), **entry}))

    def answer(self, t: float, host: str, op: str, result: Any, **args: Any) -> None:
        rid = self.ids[host] = self.ids.get(host, 0) + 1
        self.add(t, {"host": host, "conn": 1, "dir": "send", "msg": {"id": rid, "op": op, **args}})
        self.add(
            t + 0.001,
            {"host": host, "conn": 1, "dir": "recv", "msg": {"id": rid, "ok": True, "result": result}},
        )

    def push(self, t: float, host: str, job: str, node: str, records: list[dict[str, Any]]) -> None:
        self.add(
            t,
            {
                "host": host,
                "conn": 1,
                "dir": "recv",
                "msg": {"push": "events", "job": job, "node": node, "events": records},
            },
        )

    def write(self, path: Path) -> None:
        self.lines.sort(key=lambda x: (x[0], x[1]))
        with path.open("w", encoding="utf-8") as f:
            f.write(json.dumps({"format": "gpudeck-recording", "version": 1, "created_at": HOST_NOW}) + "\n")
            for _, _, entry in self.lines:
                f.write(json.dumps(entry, separators=(",", ":")) + "\n")


def uuid(h: int, g: int) -> str:
    return f"GPU-{0x5EED0000 + h:08x}-{g:04x}-4c1a-9d2e-{h * 8 + g:012x}"


HOSTS = ["h100-a", "h100-b", "h100-spot"]
# $/h as the recorded client told each agent (the `price` op, from its hosts.toml): 8×H100 on demand, and spot
PRICES = {"h100-a": (98.32, "on-demand"), "h100-b": (98.32, "on-demand"), "h100-spot": (39.8, "spot")}
# job id, name, argv, started (s before now), steps in all, step rate, loss shape, [(host, node, GPUs)]
JOBS = [
    (
        "20261202-031214-7f3a9c",
        "llama3-8b-sft",
        [
            "torchrun",
            "--nnodes=2",
            "--nproc-per-node=8",
            "train_sft.py",
            "--model",
            "meta-llama/Meta-Llama-3-8B",
            "--bf16",
            "--checkpoint-dir",
            "s3://ml-ckpt/llama3-sft",
        ],
        3 * 3600 + 840,
        12000,
        0.62,
        (2.35, 0.78, 2600.0),
        [("h100-a", "0", range(8)), ("h100-b", "1", range(8))],
    ),
    (
        "20261202-044811-c41e07",
        "vit-h14-pretrain",
        [
            "torchrun",
            "--nproc-per-node=7",
            "pretrain.py",
            "--model",
            "vit_huge_patch14",
            "--batch-size",
            "2048",
        ],
        2 * 3600 + 1210,
        40000,
        2.9,
        (6.9, 2.05, 9000.0),
        [("h100-spot", "0", range(7))],
    ),
]


def loss_at(step: float, shape: tuple[float, float, float], rng: random.Random) -> float:
    top, floor, scale = shape
    return round(floor + (top - floor) * math.exp(-step / scale) + rng.gauss(0, 0.018 * top), 4)


def busy_gpus(host: str) -> dict[int, str]:
    """GPU index → job id, for the GPUs a job uses on this host."""
    return {g: jid for jid, *_, nodes in JOBS for h, _, gpus in nodes if h == host for g in gpus}


def gpu_reading(h: int, g: int, busy: bool, rng: random.Random) -> dict[str, Any]:
    hot = g == 3 and h == 2  # one GPU running hot on the spot host: the threshold colour shows
    return {
        "index": g,
        "uuid": uuid(h, g),
        "name": GPU_NAME,
        "util": rng.randint(91, 100) if busy else 0,
        "mem_used_mib": rng.randint(70_500, 74_800) if busy else 3,
        "mem_total_mib": MEM_TOTAL,
        "temp_c": (rng.randint(86, 88) if hot else rng.randint(63, 76)) if busy else 31,
        "power_w": round(rng.uniform(610, 695) if busy else 71.5, 1) if not hot else 712.4,
        "power_limit_w": 700.0,
    }


def ring_detail(h: int, g: int, busy: bool, s: int, rng: random.Random) -> dict[str, Any]:
    """What serve's ring keeps besides utilization, s seconds ago: memory filling as the job warmed
    up, power and temperature dipping with utilization at each evaluation pause."""
    if not busy:
        return {"mem_used_mib": 3, "temp_c": 31, "power_w": 71.5}
    pause = s % 97 <= 3
    hot = g == 3 and h == 2
    return {
        "mem_used_mib": min(74_800, 52_000 + 90 * (300 - s)) + rng.randint(0, 400),
        "temp_c": (rng.randint(84, 88) if hot else rng.randint(63, 76)) - (9 if pause else 0),
        "power_w": round(712.4 if hot and not pause else rng.uniform(610, 695) - (300 if pause else 0), 1),
    }


def hello(h: int, host: str) -> dict[str, Any]:
    return {
        "hostname": host,
        "os": "Ubuntu 22.04.4 LTS, Linux 5.15.0-119-generic x86_64",
        "python": "3.10.12",
        "cpu_count": 192,
        "ram_total_mib": 2_063_000,
        "boot_time": HOST_NOW - 86400 * 12,
        "logind": {
            "systemd": True,
            "kill_user_processes": False,
            "linger": True,
            "jobs_killed_at_logout": False,
            "advice": None,
        },
        "agent_version": "0.1.0",
        "protocol": 1,
        "time": HOST_NOW,
        "agent_dir": "/home/ml/.gpudeck",
        "gpu": {
            "available": True,
            "reason": None,
            "driver_version": "550.90.07",
            "cuda_version": "12.4",
            "gpus": [
                {"index": g, "uuid": uuid(h, g), "name": GPU_NAME, "mem_total_mib": MEM_TOTAL}
                for g in range(8)
            ],
        },
    }


def gpus_answer(h: int, host: str, t: float, rng: random.Random, history: bool) -> dict[str, Any]:
    busy = busy_gpus(host)
    sample: dict[str, Any] = {
        "available": True,
        "reason": None,
        "time": t,
        "gpus": [
            {
                **gpu_reading(h, g, g in busy, rng),
                "processes": [{"pid": 41_200 + g, "user": "ml", "mem_mib": 70_112}] if g in busy else [],
            }
            for g in range(8)
        ],
        "cpu": {"util": round(rng.uniform(38, 55), 1), "load": [71.2, 69.8, 70.4], "count": 192},
        "ram": {"total_mib": 2_063_000, "available_mib": 1_402_000, "used_mib": 661_000},
    }
    if history:  # serve's 1 Hz ring: the sparklines' last five minutes
        ring = random.Random(h)  # its own stream: memory, power, temperature leave the rest as it was
        sample["history"] = [
            {
                "t": t - s,
                "gpus": [
                    {
                        "index": g,
                        "util": (rng.randint(88, 100) if s % 97 > 3 else 35) if g in busy else 0,
                        **ring_detail(h, g, g in busy, s, ring),
                    }
                    for g in range(8)
                ],
            }
            for s in range(300, 0, -1)
        ]
    return sample


def journal(
    jid: str,
    node: str,
    host: str,
    h: int,
    gpus: range,
    started: float,
    steps: int,
    rate: float,
    shape: tuple[float, float, float],
    rng: random.Random,
    rank0: bool,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The node's journal up to now, and the `last` values its job object carries."""
    recs: list[dict[str, Any]] = [
        {
            "t": started,
            "kind": "state",
            "state": "starting",
            "supervisor_pid": 41_100,
            "agent_version": "0.1.0",
        },
        {"t": started + 2.1, "kind": "state", "state": "running", "pid": 41_150},
    ]
    last: dict[str, Any] = {}
    t, step = started + 40, 0
    while t < HOST_NOW - 1:
        step = int((t - started - 40) * rate)
        if rank0 and step > 0:
            values: dict[str, Any] = {
                "step": step,
                "loss": loss_at(step, shape, rng),
                "total_steps": steps,
                "lr": 2e-5,
                "samples_per_s": round(rng.uniform(0.97, 1.03) * rate * 512, 1),
            }
            if step % 500 < rate * 20:
                values["val_loss"] = round(values["loss"] + 0.04 + rng.uniform(0, 0.02), 4)
            recs.append({"t": t, "kind": "metric", "values": values})
            last = values
        if int(t - started) % 120 < 20:
            recs.append(
                {
                    "t": t,
                    "kind": "gpu",
                    "gpus": [
                        {k: v for k, v in gpu_reading(h, g, True, rng).items() if k != "name"} for g in gpus
                    ],
                }
            )
        t += 30
    for i, r in enumerate(recs, 1):
        r["seq"] = i
    return recs, last


def job_object(
    jid: str,
    name: str,
    argv: list[str],
    node: str,
    started: float,
    steps: int,
    last: dict[str, Any],
    last_seq: int,
    host: str,
    share: float,
) -> dict[str, Any]:
    per_hour, market = PRICES[host]
    price = {"per_hour": per_hour, "currency": "USD", "share": share, "market": market}
    return {
        "id": jid,
        "node": node,
        "state": "running",
        "exit_code": None,
        "signal": None,
        "started_at": started,
        "ended_at": None,
        "pid": 41_150,
        "supervisor_pid": 41_100,
        "cause": None,
        "tail": None,
        "reason": None,
        "last": last,
        "last_seq": last_seq,
        "name": name,
        "argv": argv,
        "workdir": "/home/ml/work",
        "restart_of": None,
        "created_at": started - 1,
        "grace": 60.0,
        "total_steps": steps,
        "price": {**price, "source": "hosts.toml price_per_hour"},
        "budget": None,
        "idle_stop": None,
    }


def procs_answer(h: int, node: str, gpus: range, argv: list[str], rng: random.Random) -> dict[str, Any]:
    """The node's process tree as the agent's `procs` op reports it."""
    rows = [
        {
            "pid": 41_100,
            "ppid": 1,
            "command": f"/usr/bin/python3 /home/ml/.gpudeck/agents/3f9c1e.pyz run "
            f"/home/ml/.gpudeck/jobs/…/{node}",
            "cpu_percent": 0.3,
            "rss_bytes": 31 << 20,
            "threads": 3,
            "role": "supervisor",
            "gpus": [],
        },
        {
            "pid": 41_150,
            "ppid": 41_100,
            "command": " ".join(argv),
            "cpu_percent": 1.7,
            "rss_bytes": 412 << 20,
            "threads": 9,
            "role": "command",
            "gpus": [],
        },
    ]
    script = next(a for a in argv if a.endswith(".py"))
    for g in gpus:
        worker = 41_200 + g
        rows.append(
            {
                "pid": worker,
                "ppid": 41_150,
                "command": f"/usr/bin/python3 -u {script} --local-rank={g}",
                "cpu_percent": round(rng.uniform(96, 142), 1),
                "rss_bytes": int(rng.uniform(9.1, 11.8) * GIB),
                "threads": 74,
                "role": "child",
                "gpus": [{"index": g, "uuid": uuid(h, g), "mem_mib": 70_112}],
            }
        )
        for w in range(2 if g < 2 else 0):  # a few DataLoader workers
            rows.append(
                {
                    "pid": 42_000 + g * 10 + w,
                    "ppid": worker,
                    "command": "/usr/bin/python3 -u "
                    "-c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=13, pipe_handle=21)",
                    "cpu_percent": round(rng.uniform(35, 60), 1),
                    "rss_bytes": int(rng.uniform(1.6, 2.3) * GIB),
                    "threads": 4,
                    "role": "child",
                    "gpus": [],
                }
            )
    return {"processes": rows, "gpu_available": True, "interval": 0.3}


def output_tail(name: str, last: dict[str, Any], steps: int) -> bytes:
    lines = [f"[rank0] {name}: resumed from s3://ml-ckpt/{name}/step-{max(0, last.get('step', 0) - 2000)}"]
    step = last.get("step", 0)
    for s in range(max(1, step - 40), step + 1):
        lines.append(
            json.dumps(
                {
                    "step": s,
                    "loss": round(last.get("loss", 1.0) + 0.01 * ((s * 7) % 5 - 2), 4),
                    "total_steps": steps,
                    "samples_per_s": last.get("samples_per_s"),
                }
            )
        )
    return ("\n".join(lines) + "\n").encode()


def make_recording(path: Path) -> None:
    rng = random.Random(20261202)
    tape = Tape()
    jobs_of: dict[str, list[dict[str, Any]]] = {host: [] for host in HOSTS}
    for h, host in enumerate(HOSTS):
        tape.add(
            0.0,
            {
                "host": host,
                "conn": 1,
                "dir": "recv",
                "msg": {"gpudeck": "agent", "version": "0.1.0", "protocol": 1, "pid": 3100 + h},
            },
        )
        tape.answer(0.001, host, "hello", hello(h, host))
        tape.answer(
            0.0015,
            host,
            "price",
            {"recorded": False, "at": HOST_NOW - 86400},
            per_hour=PRICES[host][0],
            currency="USD",
            at=HOST_NOW - 86400,
        )
    for jid, name, argv, ago, steps, rate, shape, nodes in JOBS:
        started = HOST_NOW - ago
        for host, node, gpus in nodes:
            h = HOSTS.index(host)
            recs, last = journal(
                jid, node, host, h, gpus, started, steps, rate, shape, rng, rank0=node == "0"
            )
            tape.push(0.002, host, jid, node, recs)
            jobs_of[host].append(
                job_object(jid, name, argv, node, started, steps, last or {}, len(recs), host, len(gpus) / 8)
            )
            tape.answer(0.003, host, "procs", procs_answer(h, node, gpus, argv, rng), job=jid, node=node)
            data = output_tail(name, last, steps) if node == "0" else b"[rank8] waiting for rank 0\n"
            tape.answer(
                0.003,
                host,
                "logs",
                {"offset": 0, "data": base64.b64encode(data).decode(), "size": len(data), "done": False},
                job=jid,
                node=node,
            )
    for sec in range(4):
        for h, host in enumerate(HOSTS):
            tape.answer(0.01 + sec, host, "gpus", gpus_answer(h, host, HOST_NOW + sec, rng, history=sec == 0))
            tape.answer(0.02 + sec, host, "jobs", {"jobs": jobs_of[host]})
    tape.write(path)


async def shoot() -> None:
    from tui.app import GpuDeckApp
    from tui.remote.replay import Recording
    from tui.screens.job import JobScreen
    from tui.screens.procs import ProcessesScreen
    from tui.services import connections as feed

    feed.GPU_PERIOD = feed.JOBS_PERIOD = 0.05  # take the recorded polls at once
    recording = Recording.load(RECORDING)
    app = GpuDeckApp(
        hosts=recording.hosts,
        transport=lambda host: recording.transport(host, speed=0),
        store=None,
        replay=str(RECORDING.name),
        host_settings=recording.host_settings,  # as `gpudeck --replay` prices the hosts
    )
    async with app.run_test(size=SIZE) as pilot:

        async def until(cond: Any, what: str, timeout: float = 60.0) -> None:
            for _ in range(int(timeout / 0.1)):
                if cond():
                    return
                await pilot.pause(0.1)
            raise SystemExit(f"timed out waiting for {what}")

        sft = JOBS[0][0]
        await until(
            lambda: (
                len(app.fleet.jobs) == 2
                and all(len(h.gpus) == 8 for h in app.fleet.hosts.values())
                and len(app.fleet.jobs[sft].nodes) == 2
                and app.fleet.jobs[sft].gpu_util
            ),
            "the fleet",
        )
        await pilot.pause(1.0)
        app.clear_notifications()
        app.save_screenshot("screenshot-gpu-fleet.svg", str(DOCS))
        await app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, sft))
        await pilot.pause(2.0)
        app.save_screenshot("screenshot-gpu-job.svg", str(DOCS))
        await app.push_screen(ProcessesScreen(app.fleet, app.connections, app.job_control, job_id=sft))
        await until(
            lambda: (
                isinstance(app.screen, ProcessesScreen)
                and app.screen.table is not None
                and app.screen.table.rows
            ),
            "the processes",
        )
        await pilot.pause(0.5)
        app.save_screenshot("screenshot-gpu-procs.svg", str(DOCS))


def main() -> None:
    make_recording(RECORDING)
    asyncio.run(shoot())
    print("saved:", RECORDING.name, *sorted(p.name for p in DOCS.glob("screenshot-gpu-*.svg")))


if __name__ == "__main__":
    main()
