"""A watched log file vs the same lines printed by a launched job, side by side in one run: metric
events/s through (follower copy →) supervisor → journal → serve → client.

The watch reads a file that already holds N lines (a run gpudeck did not start, watched late);
the launched job prints the same N lines (`cat` of that file). Both end at the client's N-th
metric event. The ratio is the follower's cost on top of the shared pipeline.

    python bench/bench_watch.py [--lines 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remote_agent.names import new_job_id  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402


def spec(workdir: str, **extra: object) -> dict:
    job_id = new_job_id()
    return {"id": job_id, "name": "bench-" + job_id[-6:], "workdir": workdir, **extra}


def events_per_s(client: AgentClient, job_spec: dict, n: int) -> float:
    start = time.perf_counter()
    job = client.request("launch", spec=job_spec, timeout=60)
    client.tail(job["id"], "0", since_seq=0)
    metrics = 0
    while metrics < n:
        _, _, records = client.events.get(timeout=120)
        metrics += sum(1 for r in records if r["kind"] == "metric")
    took = time.perf_counter() - start
    client.request("stop", job=job["id"], node="0", grace=1, timeout=60)
    return n / took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        log.write_text("".join(f"step={i} loss={1.0 / i:.6f}\n" for i in range(1, args.lines + 1)))
        client = AgentClient(LocalTransport(Path(tmp) / "agent"))
        client.connect()
        watched, launched = [], []
        try:
            for _ in range(args.rounds):
                watched.append(events_per_s(client, spec(tmp, argv=[], watch={"path": str(log)}), args.lines))
                launched.append(events_per_s(client, spec(tmp, argv=["cat", str(log)]), args.lines))
        finally:
            client.close()
    w, r = statistics.median(watched), statistics.median(launched)
    print(f"{args.lines} lines, median of {args.rounds} rounds")
    print(f"  watch (file → copy → parse → journal → client): {w:10.0f} events/s")
    print(f"  run   (cat → output.log → parse → journal → client): {r:10.0f} events/s")
    print(f"  ratio watch/run: {w / r:.2f}")


if __name__ == "__main__":
    main()
