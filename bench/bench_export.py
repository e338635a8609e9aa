"""/metrics for 64 hosts × 8 GPUs and 200 jobs, beside a static file of the same size served by
http.server, in the same run (issue 35: ≤ 50 ms).

Synthetic data goes straight into the formatter (no agent is asked): what is timed is gpudeck's
own work per scrape — formatting every series and serving it — against the floor of serving those
bytes at all. Each round GETs both over loopback, alternating; medians.

    python bench/bench_export.py [--hosts 64] [--gpus 8] [--jobs 200] [--rounds 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remote_agent.exporter.exposition import render  # noqa: E402
from remote_agent.exporter.server import metrics_server, start  # noqa: E402
from remote_agent.exporter.snapshot import Gpu, Host, JobPoint, Snapshot  # noqa: E402


def synthetic(hosts: int, gpus: int, jobs: int) -> Snapshot:
    return Snapshot(
        [
            Host(
                f"gpu-node-{h:03d}",
                True,
                [
                    Gpu(
                        i,
                        f"GPU-{h:08x}-{i:04x}-0000-0000-000000000000",
                        "NVIDIA H100 80GB HBM3",
                        50.0 + i,
                        40000.0 + h,
                        81559.0,
                        60.0 + i,
                        350.5,
                    )  # fmt: skip
                    for i in range(gpus)
                ],
            )
            for h in range(hosts)
        ],
        [
            JobPoint(
                f"20261205-2300{j:02d}-{j:06x}",
                f"llama-ft-{j}",
                f"gpu-node-{j % hosts:03d}",
                "running",
                0.5 + j / 1000,
                1000 + j,
                812.25,
                3e-4,
                12.5 + j,
                "USD",
                3600.0 * j,
            )  # fmt: skip
            for j in range(jobs)
        ],
    )


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


def get_ms(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as r:
        size = len(r.read())
    return (time.perf_counter() - start) * 1000, size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    snap = synthetic(args.hosts, args.gpus, args.jobs)
    text = render(snap)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "metrics").write_text(text)
        static = ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=tmp))
        threading.Thread(target=static.serve_forever, daemon=True).start()
        ours = metrics_server("127.0.0.1", 0, lambda: render(snap))  # formatted on every scrape: no cache
        start(ours)
        urls = {
            "gpudeck /metrics": f"http://127.0.0.1:{ours.server_address[1]}/metrics",
            "static file": f"http://127.0.0.1:{static.server_address[1]}/metrics",
        }
        times: dict[str, list[float]] = {name: [] for name in urls}
        sizes: dict[str, int] = {}
        for url in urls.values():
            get_ms(url)  # warm
        formats = []
        for _ in range(args.rounds):  # the three interleaved: a loaded machine's swings hit all alike
            t0 = time.perf_counter()
            render(snap)
            formats.append((time.perf_counter() - t0) * 1000)
            for name, url in urls.items():
                ms, sizes[name] = get_ms(url)
                times[name].append(ms)
        ours.shutdown()
        static.shutdown()
    lines = text.count("\n")
    print(
        f"{args.hosts} hosts x {args.gpus} GPUs, {args.jobs} jobs: {lines} lines, {len(text.encode()):,} bytes"
    )
    print(f"  formatting alone: median {statistics.median(formats):.2f} ms")
    for name, ms in times.items():
        print(
            f"  GET {name}: median {statistics.median(ms):.2f} ms (p90 {sorted(ms)[int(len(ms) * 0.9)]:.2f}), {sizes[name]:,} bytes"
        )
    ratio = statistics.median(times["gpudeck /metrics"]) / statistics.median(times["static file"])
    print(
        f"  /metrics vs static file: {ratio:.2f}x; goal <= 50 ms: {'met' if statistics.median(times['gpudeck /metrics']) <= 50 else 'missed'}"
    )


if __name__ == "__main__":
    main()
