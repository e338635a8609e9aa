"""The preemption notice, measured: a local agent's job on a host with provider aws, a fake IMDSv2
service on 127.0.0.1 (tests/support/metadata.py) that starts serving the notice at a random point
of the agent's poll cycle. Per run: notice served → the agent saw it (the journal's `preempted`
seen_at), and notice served → the job's end journaled (stopped, reason preempted). Baselines in the
same run: the poll interval itself (the most a look can wait), and a user's `stop` of the same kind
of job (stop request → end journaled): what the notice adds to a stop is its look.

    python bench/bench_notice.py [--runs 7] [--poll 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from remote_agent.names import new_job_id  # noqa: E402
from remote_agent.preempt.watch import POLL_VAR  # noqa: E402
from tests.support.metadata import fake_metadata  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402

JOB = """
import signal, sys, time
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
print("up", flush=True)
time.sleep(300)
"""
ENDED = ("stopped", "failed", "exited", "killed")


def records(agent: Path, job: str) -> list[dict]:
    path = agent / "jobs" / job / "0" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait(cond, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if time.monotonic() > deadline:
            raise SystemExit("bench_notice: timed out")
        time.sleep(0.005)
    return got


def launch(client: AgentClient, agent: Path, work: Path, notice: dict | None) -> str:
    job_id = new_job_id()
    spec = {"id": job_id, "name": "bench-notice", "argv": [sys.executable, "-c", JOB], "workdir": str(work)}
    if notice:
        spec["notice"] = notice
    client.request("launch", timeout=30, spec=spec)
    wait(lambda: any(r.get("state") == "running" for r in records(agent, job_id)))
    wait(lambda: "up" in (agent / "jobs" / job_id / "0" / "output.log").read_text())
    return job_id


def end_t(agent: Path, job_id: str) -> float:
    return wait(lambda: next((r["t"] for r in records(agent, job_id) if r.get("state") in ENDED), None))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--poll", type=float, default=2.0, help="the agent's poll interval (its default: 2 s)")
    args = ap.parse_args()
    os.environ[POLL_VAR] = str(args.poll)
    seen, ended, stops = [], [], []
    with tempfile.TemporaryDirectory() as tmp, fake_metadata() as fake:
        agent, work = Path(tmp) / "agent", Path(tmp)
        client = AgentClient(LocalTransport(agent))
        client.connect()
        try:
            for _ in range(args.runs):
                fake.notice_at = fake.served_at = None
                job = launch(client, agent, work, {"provider": "aws", "metadata_endpoint": fake.url})
                time.sleep(random.uniform(0, args.poll))  # anywhere in the poll cycle
                served = time.time()
                fake.serve_notice(seconds=120)
                done = end_t(agent, job)
                (pre,) = [r for r in records(agent, job) if r.get("event") == "preempted"]
                seen.append(pre["data"]["seen_at"] - served)
                ended.append(done - served)
                plain = launch(client, agent, work, None)  # the baseline: a user's stop of the same job
                asked = time.time()
                client.request("stop", job=plain, node="0", timeout=30)
                stops.append(end_t(agent, plain) - asked)
        finally:
            client.close()

    def line(name: str, xs: list[float]) -> None:
        print(f"{name:44s} median {statistics.median(xs):6.3f} s  max {max(xs):6.3f} s  ({len(xs)} runs)")

    line("notice served -> agent saw it", seen)
    line("notice served -> end journaled (preempted)", ended)
    line("baseline: the poll interval", [args.poll])
    line("baseline: user stop -> end journaled", stops)


if __name__ == "__main__":
    main()
