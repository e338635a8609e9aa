"""Where a warm `gpudeck ps` spends its time (issue 33), part by part, medians, load printed.

One private sshd on 127.0.0.1 (bench/loopback.py: hosts `local` and `box`), box's master up. Parts:
- `python -c pass` and `python -m tui --version` (the interpreter; the CLI's own start);
- the client's imports in a warm `ps` (`-X importtime`, self times summed by top-level package);
- the local host's listing, read in the client (tui/remote/local_jobs.py): its imports, the listing;
- box's agent: a plain `serve` started through an OpenSSH master (what each warm command paid
  before) vs a session of the master's shared serve (unix socket → hello → `jobs`);
- the whole warm `ps`, this checkout vs `--against DIR` (another checkout), alternating.

    python bench/bench_warm_parts.py [--rounds 7] [--against /tmp/base]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bytecode import cache_bytecode  # noqa: E402
from bench.loopback import loopback_host  # noqa: E402


def median_ms(rounds: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


# --against's own GPUDECK_HOME (a copy: the same hosts and keys): its own master and shared serve. In
# one home, each switch of tree (another agent build) started a serve, and that was what got timed.
AGAINST_HOME: list[Path] = []


def gpudeck(*args: str, tree: Path = ROOT, extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUDECK_SSH_PERSIST": "600", "PYTHONPATH": str(tree)}
    if tree != ROOT and AGAINST_HOME:
        env["GPUDECK_HOME"] = str(AGAINST_HOME[0])
    # cwd: `python -m` puts the current directory first on sys.path, before PYTHONPATH.
    done = subprocess.run(
        [sys.executable, *extra, "-m", "tui", *args], capture_output=True, text=True, env=env, cwd=tree
    )
    if done.returncode != 0:
        raise SystemExit(f"gpudeck {' '.join(args)} failed: {done.stderr.strip()}")
    return done


def imports_by_package(stderr: str) -> dict[str, float]:
    """-X importtime's self times (ms), summed by top-level package."""
    sums: dict[str, float] = defaultdict(float)
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if m:
            sums[m.group(2).split(".")[0]] += int(m.group(1)) / 1000
    return dict(sums)


def hello_then_jobs(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(ms to the hello, ms to a `jobs` answer after it) of a serve started with argv."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    while b'"gpudeck"' not in proc.stdout.readline():
        pass
    hello = time.perf_counter()
    proc.stdin.write(b'{"id": 1, "op": "jobs"}\n')
    proc.stdin.flush()
    proc.stdout.readline()
    done = time.perf_counter()
    proc.stdin.close()
    proc.wait()
    return (hello - start) * 1000, (done - hello) * 1000


def local_listing() -> tuple[float, float]:
    """(ms importing what `ps` reads the local host with, after the CLI's own imports; ms listing)."""
    code = (
        "import time, tui.cli, tui.session\n"
        "t0 = time.perf_counter()\n"
        "from tui.remote.local_jobs import local_jobs\n"
        "import remote_agent.serving.jobreader\n"  # what local_jobs() imports when it runs
        "t1 = time.perf_counter()\n"
        "local_jobs()\n"
        "print((t1 - t0) * 1000, (time.perf_counter() - t1) * 1000)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imports, listing = done.stdout.split()
    return float(imports), float(listing)


def session_hello_then_jobs() -> tuple[float, float]:
    """The same through box's master: a session of its shared serve (what a warm command does)."""
    from tui.hosts_file import load_hosts
    from tui.remote.transport import TransportError
    from tui.remote.warm_fast import WarmFirstTransport
    from tui.settings import load

    got: list[bytes] = []
    transport = WarmFirstTransport(load_hosts()["box"], load().ssh)
    transport.push_to(got.append, lambda why: None)
    start = time.perf_counter()
    transport.open()
    if transport._direct is not None:
        raise TransportError("box's master did not answer: the fast path was not taken")
    while b'"gpudeck"' not in b"".join(got):
        time.sleep(0.0005)
    hello = time.perf_counter()
    seen = len(b"".join(got))
    transport.write(b'{"id": 1, "op": "jobs"}\n')
    while b'"id":1' not in b"".join(got)[seen:]:
        time.sleep(0.0005)
    done = time.perf_counter()
    transport.close()
    return (hello - start) * 1000, (done - hello) * 1000


def medians(rounds: int, run: Callable[[], tuple[float, float]]) -> tuple[float, float]:
    pairs = [run() for _ in range(rounds)]
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", type=Path, help="another checkout's root (e.g. git archive of main)")
    parser.add_argument("--no-bytecode", action="store_true", help="keep the environment's bytecode setting")
    args = parser.parse_args()
    rounds = args.rounds
    with tempfile.TemporaryDirectory(prefix="bench-warm-parts-") as tmp:
        os.environ.pop("XDG_RUNTIME_DIR", None)
        if not args.no_bytecode:
            print(cache_bytecode(Path(tmp) / "pycache"))
        lb = loopback_host(Path(tmp))
        if args.against:
            AGAINST_HOME.append(Path(tmp) / "gpudeck-against")
            shutil.copytree(os.environ["GPUDECK_HOME"], AGAINST_HOME[0])
        try:
            print(f"load before: {os.getloadavg()[0]:.2f}; {rounds} rounds, medians")
            gpudeck("ps")  # box's master up, its shared serve too
            if args.against:
                gpudeck("ps", tree=args.against)
            print(
                f"python -c pass: {median_ms(rounds, lambda: subprocess.run([sys.executable, '-c', 'pass'])):.0f} ms"
            )
            print(f"gpudeck --version: {median_ms(rounds, lambda: gpudeck('--version')):.0f} ms")
            for tree in [ROOT, *([args.against] if args.against else [])]:
                sums = imports_by_package(gpudeck("ps", tree=tree, extra=("-X", "importtime")).stderr)
                top = sorted(sums.items(), key=lambda kv: -kv[1])[:8]
                print(
                    f"imports of a warm ps ({tree}): {sum(sums.values()):.0f} ms in all (self times, -X importtime)"
                )
                print("  " + ", ".join(f"{name} {ms:.0f}" for name, ms in top))
            agent_dir = str(lb.agent_dir)
            local = medians(rounds, local_listing)
            print(
                f"the local host's listing, in the client: its imports {local[0]:.0f} ms, the listing {local[1]:.0f} ms"
            )
            pyz = sorted((lb.agent_dir / "agents").glob("*.pyz"), key=lambda p: p.stat().st_mtime)[-1]
            ctl = Path(tmp) / "ctl"
            home = Path(os.environ["HOME"])
            ssh = ["ssh", "-F", str(home / ".ssh" / "config"), "-i", str(home / ".ssh" / "id_ed25519")]
            ssh += ["-o", "BatchMode=yes", "-o", f"UserKnownHostsFile={lb.known}"]
            subprocess.run(
                [*ssh, "-M", "-S", str(ctl), "-f", "-N", "box"], check=True, stdin=subprocess.DEVNULL
            )
            try:
                argv = [
                    *ssh,
                    "-S",
                    str(ctl),
                    "box",
                    sys.executable,
                    str(pyz),
                    "serve",
                    "--agent-dir",
                    agent_dir,
                ]
                plain = medians(rounds, lambda: hello_then_jobs(argv))
            finally:
                subprocess.run([*ssh, "-S", str(ctl), "-O", "exit", "box"], capture_output=True)
            print(
                f"box, a plain serve per command (exec over a control master): hello {plain[0]:.0f} ms, then jobs {plain[1]:.0f} ms"
            )
            shared = medians(rounds, session_hello_then_jobs)
            print(
                f"box, a session of the shared serve (this change): hello {shared[0]:.1f} ms, then jobs {shared[1]:.1f} ms"
            )
            ours, theirs = [], []
            for _ in range(rounds):
                ours.append(median_ms(1, lambda: gpudeck("ps")))
                if args.against:
                    theirs.append(median_ms(1, lambda: gpudeck("ps", tree=args.against)))
            line = f"warm ps (local + box): {statistics.median(ours):.0f} ms"
            if theirs:
                line += f"; --against: {statistics.median(theirs):.0f} ms"
            print(line)
            print(f"load after: {os.getloadavg()[0]:.2f}")
        finally:
            gpudeck("hosts", "disconnect")
            if args.against:
                gpudeck("hosts", "disconnect", tree=args.against)
            lb.server.stop()


if __name__ == "__main__":
    main()
