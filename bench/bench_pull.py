"""`gpudeck pull` over loopback SSH against `ssh HOST tar c | tar x` of the same tree, side by side.

One private sshd on 127.0.0.1 (bench/loopback.py), a finished job whose working directory is a tree
of --files files (half text, half random bytes; --mb in all) and one --big-mb file of random bytes (a
checkpoint). Each round times fresh CLI processes, as a user types them: the tree's first pull,
a pull with nothing changed, a pull after 10 edits, and the checkpoint alone — each beside the
baseline, OpenSSH's `ssh box tar -C WORKDIR -cf - PATH | tar -xf -` (it copies everything every
time: no tool on a base image does a quick check, rsync is not there). Medians over --rounds.

    python bench/bench_pull.py [--files 2000] [--mb 20] [--big-mb 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loopback import loopback_host  # noqa: E402
from remote_agent.names import new_job_id  # noqa: E402


def make_tree(root: Path, files: int, mb: int, big_mb: int) -> None:
    each = mb * 1_000_000 // max(files, 1)
    for i in range(files):
        d = root / "tree" / f"d{i // 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        data = (
            os.urandom(each) if i % 2 else (f"step {i} loss 0.{i:06d}\n" * (each // 24 + 1)).encode()[:each]
        )
        (d / f"f{i:05d}.txt").write_bytes(data)
    (root / "ckpt").mkdir()
    with open(root / "ckpt" / "model.pt", "wb") as f:
        for _ in range(big_mb):
            f.write(os.urandom(1_000_000))


def timed(argv: list[str], **kw: object) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - start


def ssh_tar(box, workdir: Path, path: str, dest: Path) -> float:
    dest.mkdir(parents=True, exist_ok=True)
    ssh = (
        f"ssh -T -i {box.server.client_key} -p {box.server.port} -o UserKnownHostsFile={box.known} "
        f"-o BatchMode=yes root@127.0.0.1 tar -C {workdir} -cf - {path}"
    )
    return timed(["sh", "-c", f"{ssh} | tar -C {dest} -xf -"])


def pull(job: str, path: str, dest: Path) -> float:
    return timed([sys.executable, "-m", "tui", "pull", job, path, str(dest)])


def edit(workdir: Path, count: int) -> None:
    for i, f in enumerate(sorted((workdir / "tree").rglob("*.txt"))[:count]):
        data = f.read_bytes()
        f.write_bytes(data[:-1] + bytes([(data[-1] + 1) % 256 if data else i % 256]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--mb", type=int, default=20)
    ap.add_argument("--big-mb", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-pull-"))
    box = loopback_host(root)
    (box.server.remote_home / ".bashrc").write_text("")  # its junk lines would land in tar's stream
    workdir = root / "work"
    workdir.mkdir()
    make_tree(workdir, args.files, args.mb, args.big_mb)

    from tui.session import Session

    session = Session()
    job = new_job_id()
    spec = {"id": job, "name": "bench-pull", "node": "0", "workdir": str(workdir), "argv": ["true"]}
    session.client("box").request("launch", timeout=60, spec=spec)
    session.close()
    rows: dict[str, list[tuple[float, float]]] = {}
    try:
        for r in range(args.rounds):
            ours, base = root / f"ours{r}", root / f"base{r}"
            rows.setdefault("tree, first pull", []).append(
                (pull(job, "tree", ours), ssh_tar(box, workdir, "tree", base))
            )
            rows.setdefault("tree, nothing changed", []).append(
                (pull(job, "tree", ours), ssh_tar(box, workdir, "tree", base))
            )
            edit(workdir, 10)
            rows.setdefault("tree, 10 files edited", []).append(
                (pull(job, "tree", ours), ssh_tar(box, workdir, "tree", base))
            )
            rows.setdefault(f"checkpoint {args.big_mb} MB (random)", []).append(
                (pull(job, "ckpt", ours), ssh_tar(box, workdir, "ckpt", base))
            )
            shutil.rmtree(ours)
            shutil.rmtree(base)
        print(
            f"{args.files} files, {args.mb} MB (half compressible) + one {args.big_mb} MB file; medians of {args.rounds}"
        )
        print(f"{'case':34} {'gpudeck pull':>13} {'ssh tar|tar':>12} {'ratio':>6}")
        for case, pairs in rows.items():
            ours_s = statistics.median(p[0] for p in pairs)
            base_s = statistics.median(p[1] for p in pairs)
            print(f"{case:34} {ours_s:12.2f}s {base_s:11.2f}s {ours_s / base_s:6.2f}")
    finally:
        box.server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
