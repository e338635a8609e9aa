"""Cold start of `gpudeck logs -f JOB` to its first line, against `ssh HOST tail -f` of the same file.

One private sshd on 127.0.0.1 (bench/loopback.py) and a running job on it that has printed a line.
Each round starts, in the same round: `ssh … tail -F output.log` and `gpudeck logs -f JOB` (fresh
processes, as a user types them), each timed from start to its first line on stdout; then the same
CLI run in a fresh interpreter with its stages timed (imports, SSH connect, python probe, agent
check, serve + hello, the job lookup, follow → first byte). Medians over --rounds.

    python bench/bench_logs_cold.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Run in a fresh interpreter: the CLI's own code path with each stage wrapped in a timer.
STAGES = r"""
import sys, time, json
t0 = time.perf_counter()
marks = {}
def timed(owner, name, label):
    inner = getattr(owner, name)
    def wrapper(*a, **k):
        s = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            marks[label] = marks.get(label, 0.0) + time.perf_counter() - s
    setattr(owner, name, wrapper)
from tui.commands import logs
from tui.session import Session
import tui.remote.ssh_transport as st, tui.remote.deploy as dp, tui.remote.client as cl
marks["imports"] = time.perf_counter() - t0
timed(st, "connect", "ssh connect+auth")
timed(dp, "probe_python", "python probe")
timed(dp, "upload_agent", "agent check (sftp)")
timed(cl.AgentClient, "connect", "agent start+hello (all hosts)")
import tui.actions as ac
timed(logs, "resolve", "job lookup (asks every host)")
import argparse
args = argparse.Namespace(job=sys.argv[1], follow=True, node=None)
out = sys.stdout.buffer
class First:  # the first byte ends the run (on the reading thread: leave at once)
    def write(self, data):
        import os
        marks["first line"] = time.perf_counter() - t0
        sys.stderr.write(json.dumps(marks) + "\n")
        sys.stderr.flush()
        os._exit(0)
    def flush(self): pass
sys.stdout = type("S", (), {"buffer": First(), "write": lambda s, d: len(d), "flush": lambda s: None})()
logs.run(args, Session())
"""

TICK = "import time\nprint('first', flush=True)\nwhile True: time.sleep(60)\n"


def first_line(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    took = time.perf_counter() - start
    proc.kill()
    proc.wait()
    if not line:
        raise SystemExit(f"no line from {argv[:4]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-logs-cold-"))
    from bench.bench_ssh import ssh_tail
    from bench.loopback import loopback_host
    from remote_agent.names import new_job_id
    from tests.support.cleanup import kill_all_jobs

    box = loopback_host(root)
    from tui.session import Session

    session = Session()
    job_id = new_job_id()
    try:
        client = session.client("box")
        spec = {
            "id": job_id,
            "name": "bench-cold",
            "node": "0",
            "workdir": str(box.agent_dir),
            "argv": [sys.executable, "-c", TICK],
        }
        client.request("launch", timeout=60, spec=spec)
        from tui.store import JobRecord  # indexed as `gpudeck run` indexes it

        session.store.record_job(
            JobRecord(
                id=job_id, name="bench-cold", created_at=time.time(), nodes=[{"host": "box", "node": "0"}]
            )
        )
        log = box.agent_dir / "jobs" / job_id / "0" / "output.log"
        while not log.exists() or not log.read_bytes():
            time.sleep(0.01)
        session.close()
        ours, base, stages = [], [], []
        for i in range(args.rounds):
            tail = ssh_tail(box.server, box.known, log)
            start = time.perf_counter()
            assert tail.stdout is not None
            tail.stdout.readline()
            base.append(time.perf_counter() - start)
            tail.kill()
            tail.wait()
            ours.append(first_line([sys.executable, "-m", "tui", "logs", "-f", job_id]))
            done = subprocess.run(
                [sys.executable, "-c", STAGES, job_id], capture_output=True, text=True, timeout=120
            )
            stages.append(json.loads(done.stderr.strip().splitlines()[-1]))
            print(
                f"round {i + 1}: gpudeck {ours[-1] * 1000:.0f} ms, ssh tail -f {base[-1] * 1000:.0f} ms",
                flush=True,
            )
    finally:
        session.close()
        kill_all_jobs(box.agent_dir)
        box.server.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"cold start to the first line, medians of {args.rounds} rounds (loopback sshd, {os.cpu_count()} CPUs):"
    )
    print(f"  gpudeck logs -f   {statistics.median(ours) * 1000:7.0f} ms")
    print(f"  ssh … tail -f     {statistics.median(base) * 1000:7.0f} ms")
    print(
        "  stages of gpudeck logs -f (in-process, medians; agent start+hello includes connect, probe and check):"
    )
    for key in stages[0]:
        print(f"    {key:32} {statistics.median(s.get(key, 0.0) for s in stages) * 1000:7.0f} ms")


if __name__ == "__main__":
    main()
