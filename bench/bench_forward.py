"""Bytes through `gpudeck forward` beside OpenSSH's `ssh -L`, in the same run, through the same private
sshd on 127.0.0.1 (started here, as the tests' fixture does). A server on the "node" sends --mib MiB
per connection (download) or reads them (upload); each path is timed --rounds times, interleaved,
and the medians compared. Issue 35 asks for >= 50 % of ssh -L.

    python bench/bench_forward.py [--mib 128] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loopback import loopback_host  # noqa: E402
from tests.support.cleanup import kill_all_jobs  # noqa: E402
from tests.support.sshd import free_port  # noqa: E402

# The far end: per connection, send N bytes and close (download), or read until EOF (upload).
SERVER = """
import socket, sys, threading
port, size, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
block = b"x" * (1 << 20)
def one(c):
    try:
        serve(c)
    except OSError:
        pass  # a port probe that connected and left
    c.close()
def serve(c):
    if mode == "down":
        left = size
        while left > 0:
            left -= c.send(block[: min(left, len(block))])
    else:
        while c.recv(1 << 20):
            pass
        c.sendall(b"k")
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=one, args=(c,), daemon=True).start()
"""


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def transfer(port: int, size: int, mode: str) -> float:
    """Seconds for `size` bytes through the local port, one connection."""
    t0 = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port)) as s:
        if mode == "down":
            got = 0
            while True:
                data = s.recv(1 << 20)
                if not data:
                    break
                got += len(data)
            assert got == size, (got, size)
        else:
            block = b"y" * (1 << 20)
            left = size
            while left > 0:
                left -= s.send(block[: min(left, len(block))])
            s.shutdown(socket.SHUT_WR)
            assert s.recv(1) == b"k"
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--modes", default="down,up", help="down, up or both (comma-separated)")
    args = parser.parse_args()
    size = args.mib << 20
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        box = loopback_host(root)
        home = Path(os.environ["HOME"])
        procs: list[subprocess.Popen[bytes]] = []
        try:
            results: dict[str, dict[str, list[float]]] = {}
            for mode in args.modes.split(","):
                far = free_port()
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-c", SERVER, str(far), str(size), mode], stdout=subprocess.PIPE
                    )
                )
                wait_port(far)
                # a job on the host, so `gpudeck forward JOB` has a node to reach
                job = subprocess.run(
                    [sys.executable, "-m", "tui", "run", "--host", "box", "--", "sleep", "600"],
                    capture_output=True,
                    text=True,
                    check=True,
                    cwd=tmp,
                ).stdout.strip()
                ours_port, ssh_port = free_port(), free_port()
                procs.append(
                    subprocess.Popen(
                        [sys.executable, "-m", "tui", "forward", job, f"{far}:{ours_port}"],
                        cwd=tmp,
                        stdout=subprocess.DEVNULL,
                    )
                )
                procs.append(
                    subprocess.Popen(
                        [
                            "ssh",
                            "-F",
                            str(home / ".ssh" / "config"),
                            "-i",
                            str(home / ".ssh" / "id_ed25519"),
                            "-o",
                            f"UserKnownHostsFile={box.known}",
                            "-o",
                            "StrictHostKeyChecking=yes",
                            "-o",
                            "ExitOnForwardFailure=yes",
                            "-o",
                            "BatchMode=yes",
                            "-N",
                            "-L",
                            f"{ssh_port}:127.0.0.1:{far}",
                            "box",
                        ]  # fmt: skip
                    )
                )
                wait_port(ours_port)
                wait_port(ssh_port)
                times: dict[str, list[float]] = {"forward": [], "ssh -L": []}
                transfer(ours_port, size, mode)  # warm: the first connection connects the host
                transfer(ssh_port, size, mode)
                for _ in range(args.rounds):  # interleaved, so load on the machine hits both alike
                    times["forward"].append(transfer(ours_port, size, mode))
                    times["ssh -L"].append(transfer(ssh_port, size, mode))
                results[mode] = times
            for mode, times in results.items():
                rate = {k: args.mib / statistics.median(v) for k, v in times.items()}
                print(
                    f"{mode:>4}load {args.mib} MiB, median of {args.rounds}: gpudeck forward "
                    f"{rate['forward']:.0f} MiB/s, ssh -L {rate['ssh -L']:.0f} MiB/s "
                    f"({100 * rate['forward'] / rate['ssh -L']:.0f} %; goal >= 50 %)"
                )
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait(timeout=30)
            kill_all_jobs(box.agent_dir)
            box.server.stop()


if __name__ == "__main__":
    main()
