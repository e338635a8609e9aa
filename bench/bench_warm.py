"""Warm connections (issue 33) against OpenSSH, side by side in one run, medians, load printed.

One private sshd on 127.0.0.1 (LogLevel VERBOSE: its log counts the logins). Rows:
- warm `gpudeck ps` (its master up) vs `python -c pass` + `ssh -S CTL box true` through an OpenSSH
  control master (goal ≤ 2×);
- warm `gpudeck metrics JOB --json` of a 100 k-point job vs a cold `ssh box cat` of its journal
  (goal ≤ 1×), with the logins each made (goal: none for the warm one);
- cold, 8 hosts (the job on one): `gpudeck ps` with persist 0, and again starting the 8 masters,
  vs 8 parallel `ssh true` (goal ≤ 1.2×); and warm with 8 masters up.

    python bench/bench_warm.py [--rounds 5] [--points 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bytecode import cache_bytecode  # noqa: E402
from bench.loopback import Loopback, loopback_host  # noqa: E402
from tests.support.cleanup import kill_all_jobs  # noqa: E402

HOSTS = 8


def gpudeck(*args: str, persist: str = "600") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUDECK_SSH_PERSIST": persist}
    done = subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, env=env, timeout=600
    )
    if done.returncode != 0:
        raise SystemExit(f"gpudeck {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def median_s(rounds: int, run: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    """The median wall time; the median CPU time (user + sys) of the processes it ran goes to CPU."""
    times, cpu = [], []
    for _ in range(rounds):
        if before is not None:
            before()
        used = _children_cpu()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        cpu.append(_children_cpu() - used)
    CPU.append(statistics.median(cpu))
    return statistics.median(times)


CPU: list[float] = []  # the CPU medians, in the order measured (a loaded machine distorts them least)


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def logins(lb: Loopback) -> int:
    return (lb.server.root / "sshd.log").read_text().count("Accepted publickey")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--points", type=int, default=100_000)
    parser.add_argument("--no-bytecode", action="store_true", help="keep the environment's bytecode setting")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-warm-") as tmp:
        root = Path(tmp)
        os.environ.pop("XDG_RUNTIME_DIR", None)  # the masters' sockets under this GPUDECK_HOME
        if not args.no_bytecode:
            print(cache_bytecode(Path(tmp) / "pycache"))
        lb = loopback_host(root, ["LogLevel VERBOSE"])
        try:
            run_rows(lb, root, args.rounds, args.points)
        finally:
            gpudeck("hosts", "disconnect")
            kill_all_jobs(lb.agent_dir)
            lb.server.stop()


def run_rows(lb: Loopback, root: Path, rounds: int, points: int) -> None:
    home = Path(os.environ["HOME"])
    config = home / ".ssh" / "config"
    ssh = ["ssh", "-F", str(config), "-i", str(home / ".ssh" / "id_ed25519"), "-o", "BatchMode=yes"]
    ssh += ["-o", f"UserKnownHostsFile={lb.known}"]
    ctl = root / "ctl"
    print(f"load before: {os.getloadavg()[0]:.2f}; {rounds} rounds, medians")

    code = f"for i in range({points}):\n    print(f'step={{i}} loss={{1.0 / (i + 1):.6f}}')\n"
    job = json.loads(gpudeck("run", "--host", "box", "--json", "--", sys.executable, "-c", code).stdout)["id"]
    while "exited" not in gpudeck("inspect", job).stdout:
        time.sleep(0.5)
    journal = lb.agent_dir / "jobs" / job / "0" / "events.jsonl"

    # -- warm, one host --------------------------------------------------------------------------
    gpudeck("ps")  # leaves box's master up
    subprocess.run([*ssh, "-M", "-S", str(ctl), "-f", "-N", "box"], check=True, stdin=subprocess.DEVNULL)
    try:
        ps = median_s(rounds, lambda: gpudeck("ps"))
        base = median_s(
            rounds,
            lambda: (
                subprocess.run([sys.executable, "-c", "pass"], check=True),
                subprocess.run([*ssh, "-S", str(ctl), "box", "true"], check=True, stdout=subprocess.DEVNULL),
            ),
        )
    finally:
        subprocess.run([*ssh, "-S", str(ctl), "-O", "exit", "box"], capture_output=True)
    row("warm `ps`", ps, "`python -c pass` + `ssh -S CTL box true`", base, 2.0)
    cold1 = median_s(rounds, lambda: gpudeck("ps", persist="0"))
    ps = median_s(rounds, lambda: gpudeck("ps"))
    row("cold `ps` (persist 0: a new connection each)", cold1, "warm `ps`, same run", ps, None)

    before = logins(lb)
    metrics = median_s(rounds, lambda: gpudeck("metrics", job, "--json"))
    warm_logins = logins(lb) - before
    before = logins(lb)
    cat = median_s(
        rounds, lambda: subprocess.run([*ssh, "box", "cat", str(journal)], check=True, capture_output=True)
    )
    cat_logins = logins(lb) - before
    size = journal.stat().st_size / 1e6
    row(
        f"warm `metrics JOB --json` ({points} points, journal {size:.1f} MB)",
        metrics,
        "cold `ssh box cat` of it",
        cat,
        1.0,
    )
    print(f"  logins: gpudeck {warm_logins} in {rounds} runs; ssh cat {cat_logins} in {rounds} runs")

    # -- 8 hosts ---------------------------------------------------------------------------------
    from tui.hosts_file import HostEntry, add_host

    for i in range(1, HOSTS):
        add_host(
            HostEntry(name=f"box{i}", target=f"box{i}", agent_dir=str(lb.agent_dir), python=sys.executable)
        )
    aliases = "".join(
        f"Host box{i}\n  HostName 127.0.0.1\n  Port {lb.server.port}\n  User root\n" for i in range(1, HOSTS)
    )
    config.write_text(config.read_text() + aliases)
    names = ["box", *(f"box{i}" for i in range(1, HOSTS))]

    def parallel_ssh() -> None:
        procs = [subprocess.Popen([*ssh, name, "true"], stdout=subprocess.DEVNULL) for name in names]
        for p in procs:
            if p.wait() != 0:
                raise SystemExit("ssh true failed")

    def disconnect() -> None:
        gpudeck("hosts", "disconnect")

    cold = median_s(rounds, lambda: gpudeck("ps", persist="0"))
    base8 = median_s(rounds, parallel_ssh)
    row(f"cold `ps`, {HOSTS} hosts, persist 0", cold, f"{HOSTS} parallel `ssh true`", base8, 1.2)
    starting = median_s(rounds, lambda: gpudeck("ps"), before=disconnect)
    base8 = median_s(rounds, parallel_ssh)
    row(f"cold `ps`, {HOSTS} hosts, starting masters", starting, f"{HOSTS} parallel `ssh true`", base8, 1.2)
    gpudeck("ps")
    warm8 = median_s(rounds, lambda: gpudeck("ps"))
    base8 = median_s(rounds, parallel_ssh)
    row(f"warm `ps`, {HOSTS} hosts", warm8, f"{HOSTS} parallel `ssh true`", base8, None)
    print(f"load after: {os.getloadavg()[0]:.2f}")


def row(what: str, ours: float, baseline_name: str, baseline: float, goal: float | None) -> None:
    """Wall times and their ratio, then the CPU of the commands run (not of a master or the host's
    agent): the row's two medians, the last two measured."""
    cpu_ours, cpu_base = CPU[-2], CPU[-1]
    ratio = ours / baseline
    verdict = (
        ""
        if goal is None
        else (
            f" (goal ≤ {goal:g}: met)"
            if ratio <= goal
            else f" (goal ≤ {goal:g}: missed by {ratio / goal:.2f}×)"
        )
    )
    print(f"{what}: {ours * 1000:.0f} ms | {baseline_name}: {baseline * 1000:.0f} ms | {ratio:.2f}{verdict}")
    print(f"  CPU of the commands: {cpu_ours * 1000:.0f} ms vs {cpu_base * 1000:.0f} ms")


if __name__ == "__main__":
    main()
