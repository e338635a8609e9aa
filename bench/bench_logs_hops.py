"""Where `logs -f`'s latency goes, hop by hop: each stage reads the same ticking job as
bench/bench_logs.py, beside `ssh HOST tail -F` of its output.log in the same round.

    inotify  a Python thread woken by inotify reading output.log (the floor of any Python reader)
    local    serve over a local pipe: the output hub, its push, the client's reader callback (no SSH)
    ssh      the ReconnectingClient over loopback SSH in this process, its sink on paramiko's thread
    cli      `gpudeck logs -f` as a process, read from its stdout (as the bench reads it)

Differences between stages are the hops' costs. Diagnostic only: product code is not instrumented.

    python bench/bench_logs_hops.py [--stages inotify,local,ssh,cli] [--rounds 3]
"""

from __future__ import annotations

import argparse
import base64
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_logs import TICKS, read_latencies  # noqa: E402
from bench.bench_ssh import pct, ssh_tail  # noqa: E402
from bench.loopback import loopback_host  # noqa: E402
from remote_agent.names import new_job_id  # noqa: E402
from tests.support.cleanup import kill_all_jobs  # noqa: E402


def line_feeder(into: list[float], n: int, done: threading.Event) -> Callable[[bytes, float], None]:
    """Bytes in any chunking → print-to-arrival latency of each ticked line; done at line n."""
    held = [b""]

    def feed(data: bytes, now: float) -> None:
        *lines, held[0] = (held[0] + data).split(b"\n")
        for line in lines:
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "sent" in obj:
                into.append(now - obj["sent"])
                if obj["step"] == n:
                    done.set()

    return feed


def start_stage(
    stage: str, job_id: str, out_log: Path, agent_dir: Path, n: int, ours: list[float], done: threading.Event
) -> Callable[[], Any]:
    """Start one stage's reader of the job; returns what stops it."""
    feed = line_feeder(ours, n, done)
    if stage == "inotify":
        from remote_agent.storage.watch import Watcher

        def loop() -> None:
            while not out_log.exists():
                time.sleep(0.01)
            watcher = Watcher()
            watcher.add(str(out_log))
            with open(out_log, "rb") as f:
                while not done.is_set():
                    watcher.wait(0.25)
                    data = f.read(65536)
                    if data:
                        feed(data, time.time())
            watcher.close()

        threading.Thread(target=loop, daemon=True).start()
        return done.set
    if stage == "local":
        from tui.remote.client import AgentClient
        from tui.remote.transport import LocalTransport

        def on_output(obj: dict[str, Any]) -> None:
            if obj.get("push") == "output":
                feed(base64.b64decode(obj["data"]), time.time())

        local = AgentClient(LocalTransport(agent_dir), on_output=on_output)
        local.connect()
        local.request("follow", job=job_id, node="0", offset=0)
        return local.close
    if stage == "ssh":
        from tui.remote.reconnect import ReconnectingClient
        from tui.session import transport_for

        def sink(job: str, node: str, data: bytes | None, end: Any) -> None:
            if data is not None:
                feed(data, time.time())

        remote = ReconnectingClient("box", lambda: transport_for("box"), on_output=sink)
        remote.connect()
        remote.follow(job_id, "0", offset=0)
        return remote.close
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui", "logs", "-f", job_id], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )

    ready = threading.Event()

    def cli_read() -> None:
        read_latencies(proc.stdout, n, ready, ours)
        done.set()

    threading.Thread(target=cli_read, daemon=True).start()
    if not ready.wait(60):  # its start (interpreter, SSH handshake) must not count as latency
        raise SystemExit("logs -f never showed the job's first line")
    return proc.kill


def stage_round(
    stage: str, client: Any, box: Any, n: int, interval: float
) -> tuple[list[float], list[float]]:
    job_id = new_job_id()
    go = box.agent_dir / f"go-{job_id}"
    spec = {
        "id": job_id,
        "name": "bench-hops",
        "node": "0",
        "workdir": str(box.agent_dir),
        "argv": [sys.executable, "-c", TICKS.format(n=n, interval=interval, go=str(go))],
    }
    client.request("launch", timeout=60, spec=spec)
    out_log = box.agent_dir / "jobs" / job_id / "0" / "output.log"
    ours: list[float] = []
    base: list[float] = []
    done = threading.Event()
    stop = start_stage(stage, job_id, out_log, box.agent_dir, n, ours, done)
    base_proc = ssh_tail(box.server, box.known, out_log)
    ready = threading.Event()
    reader = threading.Thread(target=read_latencies, args=(base_proc.stdout, n, ready, base), daemon=True)
    reader.start()
    if not ready.wait(60):
        raise SystemExit("ssh tail never showed the job's first line")
    time.sleep(0.5)  # every reader attached before the first tick
    go.touch()
    done.wait(n * interval + 60)
    reader.join(n * interval + 60)
    base_proc.kill()
    stop()
    if len(ours) != n or len(base) != n:
        raise SystemExit(f"{stage}: round incomplete: {len(ours)}/{n} lines, ssh tail {len(base)}/{n}")
    return ours, base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", default="inotify,local,ssh,cli")
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    stages = args.stages.split(",")
    root = Path(tempfile.mkdtemp(prefix="bench-hops-"))
    box = loopback_host(root)

    from tui.session import Session

    session = Session()
    rows: dict[str, list[tuple[float, float, float]]] = {s: [] for s in stages}
    try:
        client = session.client("box")
        for _ in range(args.rounds):
            for stage in stages:  # interleaved: load changes hit every stage alike
                ours, base = stage_round(stage, client, box, args.lines, args.interval)
                rows[stage].append((pct(ours, 50), pct(ours, 99), pct(base, 50)))
    finally:
        session.close()
        box.server.stop()
        kill_all_jobs(box.agent_dir)
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{args.rounds} rounds, {args.lines} lines every {args.interval * 1000:g} ms; medians of each round's figures"
    )
    print(f"{'stage':10}{'p50 ms':>9}{'p99 ms':>9}{'ssh tail p50':>14}{'ratio':>8}")
    for stage in stages:
        p50, p99, b50 = (statistics.median(r[i] for r in rows[stage]) * 1000 for i in range(3))
        print(f"{stage:10}{p50:9.3f}{p99:9.2f}{b50:14.3f}{p50 / b50:8.2f}")


if __name__ == "__main__":
    main()
