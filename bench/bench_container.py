"""Container jobs (issue 28, "Speed"): what gpudeck adds over the bare runtime, on this host.

    python bench/bench_container.py [--runs 9] [--checkpoint 0.3]

1. First output: a gpudeck container job (the `launch` request to its first line in output.log)
   beside a bare `podman run --rm` of the same image and command (spawn to its first stdout line),
   interleaved, medians. Target: ≤ 0.3 s more.
2. Stop: a container job whose trainer takes --checkpoint seconds to save on SIGTERM; the `stop`
   request to its answer (no process of the job left, the container removed), minus the checkpoint
   time. Target: ≤ 0.5 s.

Uses the test suite's podman setup (runc, ulimits, private storage, `localhost/py:test` built from this
machine's python): tests/support/containers.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from remote_agent.names import new_job_id  # noqa: E402
from tests.support import containers  # noqa: E402
from tests.support.cleanup import kill_all_jobs  # noqa: E402
from tui.remote.client import AgentClient  # noqa: E402
from tui.remote.transport import LocalTransport  # noqa: E402

PRINT = "print('first', flush=True)"
TRAINER = """\
import signal, sys, time
def save(*a):
    time.sleep(%s)  # the trainer's own checkpoint time
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
print('ready', flush=True)
while True:
    time.sleep(0.05)
"""


def bare_first_line() -> float:
    start = time.monotonic()
    proc = subprocess.Popen(
        ["podman", "run", "--rm", "--network", "host", containers.PY_IMAGE, "python3", "-c", PRINT],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    proc.stdout.readline()
    took = time.monotonic() - start
    proc.wait()
    return took


def wait_for_text(path: Path, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if text in path.read_text(errors="replace"):
                return
        except OSError:
            pass
        time.sleep(0.002)
    raise TimeoutError(f"{text!r} never appeared in {path}")


def launch(client: AgentClient, workdir: Path, argv: list[str]) -> str:
    job_id = new_job_id()
    spec = {
        "id": job_id,
        "name": f"bench-{job_id[-6:]}",
        "argv": argv,
        "workdir": str(workdir),
        "runtime": {"image": containers.PY_IMAGE, "runtime": "podman"},
    }
    client.request("launch", spec=spec, timeout=60)
    return job_id


def gpudeck_first_line(client: AgentClient, agent_dir: Path, workdir: Path) -> float:
    start = time.monotonic()
    job_id = launch(client, workdir, ["python3", "-c", PRINT])
    wait_for_text(agent_dir / "jobs" / job_id / "0" / "output.log", "first")
    return time.monotonic() - start


def stop_overhead(client: AgentClient, agent_dir: Path, workdir: Path, checkpoint: float) -> float:
    job_id = launch(client, workdir, ["python3", "-c", TRAINER % checkpoint])
    wait_for_text(agent_dir / "jobs" / job_id / "0" / "output.log", "ready")
    start = time.monotonic()
    final = client.request("stop", job=job_id, node="0", grace=60, timeout=90)
    took = time.monotonic() - start
    assert final["state"] == "stopped", final
    return took - checkpoint


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--checkpoint", type=float, default=0.3)
    args = parser.parse_args()
    why = containers.unusable()
    if why:
        sys.exit(f"podman cannot run here: {why}")
    containers._configure()
    containers._build_images()
    os.environ.update(containers.podman_env())
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        os.environ["GPUDECK_HOME"] = str(home)
        # The job's `bash -l` reads the user's profile: a plain one, as the tests give it (this
        # machine's root profile runs pyenv's init, ~0.1-0.3 s that is the user's, not gpudeck's).
        (home / "user").mkdir()
        (home / "user" / ".profile").write_text("")
        os.environ["HOME"] = str(home / "user")
        workdir = home / "work"
        workdir.mkdir()
        agent_dir = home / "local-agent"
        client = AgentClient(LocalTransport(agent_dir))
        client.connect()
        try:
            bare_first_line()  # warm the image's layers and podman's caches for both
            gpudeck_first_line(client, agent_dir, workdir)
            bare, ours, stops = [], [], []
            for _ in range(args.runs):
                bare.append(bare_first_line())
                ours.append(gpudeck_first_line(client, agent_dir, workdir))
            for _ in range(args.runs):
                stops.append(stop_overhead(client, agent_dir, workdir, args.checkpoint))
        finally:
            client.close()
            kill_all_jobs(agent_dir)
    b, g = statistics.median(bare), statistics.median(ours)
    print(
        f"first output, median of {args.runs}: bare podman run --rm {b:.3f} s, gpudeck job {g:.3f} s, overhead {g - b:+.3f} s (target <= 0.3 s)"
    )
    print(f"  bare runs: {' '.join(f'{x:.3f}' for x in bare)}")
    print(f"  gpudeck runs: {' '.join(f'{x:.3f}' for x in ours)}")
    s = statistics.median(stops)
    print(
        f"stop beyond a {args.checkpoint:.1f} s checkpoint, median of {args.runs}: {s:.3f} s (target <= 0.5 s)"
    )
    print(f"  runs: {' '.join(f'{x:.3f}' for x in stops)}")


if __name__ == "__main__":
    main()
