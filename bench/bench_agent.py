"""The local pipeline, measured: events/s through supervisor → journal → serve → client, the agent's
own cost while a job trains, and how long `stop` takes.

Baseline, side by side in the same run: the same job's output read straight from a pipe (no
parsing, no journal, no protocol) — what any tool must at least pay to see the lines.

    python bench/bench_agent.py [--lines 100000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remote_agent.names import new_job_id  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402

FLOOD = "import sys\nw = sys.stdout.write\nfor i in range(1, {n} + 1):\n    w(f'step={{i}} loss={{1.0 / i:.6f}}\\n')\n"
TRAINING = "import time\nfor i in range(1, 100000):\n    print(f'step={i} loss={1.0 / i:.6f} lr=0.001', flush=True)\n    time.sleep(0.1)\n"


def spec(workdir: str, argv: list[str], **extra: object) -> dict:
    job_id = new_job_id()
    return {"id": job_id, "name": "bench-" + job_id[-6:], "argv": argv, "workdir": workdir, **extra}


CPU_PER_EVENT: dict[str, list[float]] = {"supervisor": [], "serve": [], "client": []}


def pipeline_events_per_s(client: AgentClient, workdir: str, n: int) -> float:
    """Events/s of one flood; also records each process's CPU µs per event (CPU_PER_EVENT): a
    figure a busy machine distorts far less than wall time."""
    serve = client.transport.proc.pid  # type: ignore[attr-defined]
    serve0, client0 = proc_stats(serve)[1], _own_cpu()
    start = time.perf_counter()
    job = client.request("launch", spec=spec(workdir, [sys.executable, "-c", FLOOD.format(n=n)]), timeout=60)
    supervisor = next(j["supervisor_pid"] for j in client.request("jobs")["jobs"] if j["id"] == job["id"])
    last_cpu = [0.0]
    sampling = threading.Event()

    def sample() -> None:  # the supervisor exits at the end: keep its last CPU reading
        while not sampling.is_set():
            try:
                last_cpu[0] = proc_stats(supervisor)[1]
            except (OSError, IndexError, ValueError):
                return
            time.sleep(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    client.tail(job["id"], "0", since_seq=0)
    metrics = 0
    while metrics < n:
        _, _, records = client.events.get(timeout=120)
        metrics += sum(1 for r in records if r["kind"] == "metric")
    elapsed = time.perf_counter() - start
    serve1, client1 = proc_stats(serve)[1], _own_cpu()
    sampler.join(timeout=30)
    sampling.set()
    CPU_PER_EVENT["supervisor"].append(1e6 * last_cpu[0] / n)
    CPU_PER_EVENT["serve"].append(1e6 * (serve1 - serve0) / n)
    CPU_PER_EVENT["client"].append(1e6 * (client1 - client0) / n)
    return n / elapsed


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def baseline_lines_per_s(n: int) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", FLOOD.format(n=n)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    count = sum(1 for _ in proc.stdout)
    proc.wait()
    assert count == n
    return n / (time.perf_counter() - start)


def proc_stats(pid: int) -> tuple[float, float]:
    """(RSS MiB, CPU seconds user+sys)."""
    rss = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return rss, (int(fields[11]) + int(fields[12])) / ticks


def agent_cost(client: AgentClient, workdir: str, seconds: float) -> dict[str, float]:
    job = client.request("launch", spec=spec(workdir, [sys.executable, "-c", TRAINING]), timeout=60)
    client.tail(job["id"], "0", since_seq=0)
    records = client.request("jobs")["jobs"]
    supervisor = next(j["supervisor_pid"] for j in records if j["id"] == job["id"])
    serve = client.transport.proc.pid  # type: ignore[attr-defined]
    time.sleep(1.0)
    sup0, serve0 = proc_stats(supervisor), proc_stats(serve)
    time.sleep(seconds)
    sup1, serve1 = proc_stats(supervisor), proc_stats(serve)
    start = time.perf_counter()
    client.request("stop", job=job["id"], node="0", timeout=120)
    stop_s = time.perf_counter() - start
    return {
        "supervisor_rss_mib": sup1[0],
        "supervisor_cpu_pct": 100 * (sup1[1] - sup0[1]) / seconds,
        "serve_rss_mib": serve1[0],
        "serve_cpu_pct": 100 * (serve1[1] - serve0[1]) / seconds,
        "stop_s": stop_s,
    }


def stop_stubborn(client: AgentClient, workdir: str, grace: float) -> float:
    script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\ntime.sleep(600)"
    job = client.request(
        "launch", spec=spec(workdir, [sys.executable, "-c", script], grace=grace), timeout=60
    )
    time.sleep(1.0)
    start = time.perf_counter()
    client.request("stop", job=job["id"], node="0", timeout=120)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cost-seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        client = AgentClient(LocalTransport(Path(tmp) / "agent"))
        client.connect()
        try:
            pipeline, baseline = [], []
            for _ in range(args.rounds):
                baseline.append(baseline_lines_per_s(args.lines))
                pipeline.append(pipeline_events_per_s(client, tmp, args.lines))
            p, b = statistics.median(pipeline), statistics.median(baseline)
            print(f"events/s, {args.lines} metric lines, median of {args.rounds}:")
            print(f"  gpudeck pipeline (parse + journal + serve + client): {p:,.0f}/s")
            print(f"  baseline (raw pipe, no parsing):                     {b:,.0f}/s")
            print(f"  ratio pipeline/baseline: {p / b:.2f}")
            cpu = {k: statistics.median(v) for k, v in CPU_PER_EVENT.items()}
            print("CPU per metric event, median: " + ", ".join(f"{k} {v:.1f} µs" for k, v in cpu.items())
                  + f" (the slowest process bounds the pipeline at ~{1e6 / max(cpu.values()):,.0f}/s per core)")  # fmt: skip
            cost = agent_cost(client, tmp, args.cost_seconds)
            print(f"agent cost over {args.cost_seconds:.0f}s of a job printing 10 lines/s:")
            print(
                f"  supervisor: RSS {cost['supervisor_rss_mib']:.1f} MiB, CPU {cost['supervisor_cpu_pct']:.2f} %"
            )
            print(f"  serve:      RSS {cost['serve_rss_mib']:.1f} MiB, CPU {cost['serve_cpu_pct']:.2f} %")
            print(f"stop, job that exits on SIGTERM: {cost['stop_s']:.2f} s")
            print(f"stop, job ignoring SIGTERM, grace 2 s: {stop_stubborn(client, tmp, 2.0):.2f} s")
        finally:
            client.close()


if __name__ == "__main__":
    main()
