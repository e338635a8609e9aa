"""Code sync over loopback SSH, side by side with `tar c | ssh host tar x` and `rsync -a` of the
same tree in the same run (medians of --rounds).

A generated tree of --files realistic Python/text files (~26 MB for 5,000). For each round:
  first     an empty remote (gpudeck: a fresh agent dir and no client hash cache; tar, rsync: a new dir)
  nochange  the same tree again
  edits     10 files edited and 1 added
gpudeck is measured two ways: `warm` (the action in this process over an open connection, as a
launch or the TUI does it) and `cli` (a `gpudeck sync` process: Python start-up, connect, sync).
tar and rsync each open their own ssh connection (OpenSSH, its default cipher).
`--against DIR` (a checkout of the code before a change, e.g. `git worktree add DIR COMMIT`) adds
`before warm` and `before cli`, the same cases run by DIR's code in the same rounds.

    python bench/bench_sync.py [--files 5000] [--rounds 5] [--against DIR]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.loopback import Loopback, loopback_host  # noqa: E402

WORDS = [
    "self",
    "data",
    "model",
    "loss",
    "step",
    "batch",
    "optimizer",
    "tensor",
    "device",
    "config",
    "value",
    "result",
    "index",
    "items",
    "return",
    "import",
    "from",
    "def",
    "class",
    "if",
    "else",
    "for",
    "in",
    "while",
    "with",
    "as",
    "try",
    "except",
    "raise",
    "None",
    "True",
    "False",
    "train",
    "eval",
    "epoch",
    "metrics",
    "logger",
    "path",
    "file",
    "name",
    "size",
    "shape",
    "grad",
    "params",
    "lr",
    "weight",
    "bias",
]


def make_tree(root: Path, files: int, seed: int = 7) -> int:
    """Python modules (mostly), docs and JSON, ~5.2 KB a file on average; returns the bytes."""
    rng = random.Random(seed)
    total = 0
    for i in range(files):
        pkg = root / f"pkg{i % 40}" / f"sub{i % 7}"
        pkg.mkdir(parents=True, exist_ok=True)
        kind = rng.random()
        lines = []
        for _ in range(rng.randint(45, 140)):
            indent = "    " * rng.randint(0, 3)
            words = rng.choices(WORDS, k=rng.randint(3, 9))
            lines.append(f"{indent}{' '.join(words)} = {rng.randint(0, 10**6)}  # {rng.choice(WORDS)}")
        text = "\n".join(lines) + "\n"
        name = f"m{i}.py" if kind < 0.85 else f"doc{i}.md" if kind < 0.95 else f"conf{i}.json"
        (pkg / name).write_text(text)
        total += len(text)
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n")
    return total


def edit(root: Path, round_no: int) -> None:
    mods = sorted(root.rglob("m*.py"))[:10]
    for p in mods:
        p.write_text(p.read_text() + f"# edited in round {round_no}\n")
    (root / f"new_{round_no}.py").write_text(f"print('new file {round_no}')\n" * 20)


def ssh_cmd(lb: Loopback) -> list[str]:
    return [
        "ssh", "-T", "-i", str(lb.server.client_key), "-p", str(lb.server.port),
        "-o", f"UserKnownHostsFile={lb.known}", "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes", "-l", "root", "127.0.0.1",
    ]  # fmt: skip


def timed(fn: Callable[..., object], *args: object, **kw: object) -> float:
    started = time.perf_counter()
    fn(*args, **kw)
    return time.perf_counter() - started


def run(cmd: str | list[str], **kw: object) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)  # type: ignore[call-overload]


# The code before, in a process of its own (its modules, its agent): syncs on each line of stdin.
WORKER = """
import sys, time
from tui.session import Session
from tui.sync.options import SyncOptions
s = Session()
s.request("box", "ping")
for line in sys.stdin:
    try:
        from tui.actions.sync import sync_directory
        sync_directory(s, SyncOptions(sys.argv[1]), ["box"])
    except ImportError:
        from tui.actions.sync import send_to_hosts
        from tui.sync.snapshot import take_snapshot
        send_to_hosts(s, ["box"], take_snapshot(SyncOptions(sys.argv[1])))
    print("ok", flush=True)
"""


class Before:
    def __init__(self, checkout: str, src: Path) -> None:
        self.env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
        self.cwd = os.path.abspath(checkout)
        self.src = src
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(src)],
            env=self.env, cwd=self.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def sync(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        if self.proc.stdout.readline().strip() != "ok":
            raise SystemExit("the code before failed a sync")

    def cli(self) -> None:
        run(
            [sys.executable, "-m", "tui", "sync", str(self.src), "--host", "box", "--json"],
            env=self.env,
            cwd=self.cwd,
        )

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", metavar="DIR", help="a checkout of the code before, run side by side")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-sync-"))
    lb = loopback_host(base)
    # The fixture's .bashrc prints junk (for the tests' sake); rsync's protocol cannot bear it.
    (lb.server.remote_home / ".bashrc").write_text("")
    from tui.actions.sync import sync_directory
    from tui.session import Session
    from tui.sync.options import SyncOptions

    src = base / "src"
    size = make_tree(src, args.files)
    print(f"tree: {args.files} files, {size / 1e6:.1f} MB; rsync: {shutil.which('rsync') or 'MISSING'}")
    ssh = ssh_cmd(lb)
    rsync_e = " ".join(ssh[:-1])  # rsync adds the host
    results: dict[str, dict[str, list[float]]] = {}
    session = Session()
    session.request("box", "ping")  # the warm connection: what a launch from the TUI has

    def note(method: str, case: str, seconds: float) -> None:
        results.setdefault(method, {}).setdefault(case, []).append(seconds)

    def gpudeck_warm() -> None:
        sync_directory(session, SyncOptions(str(src)), ["box"])

    def gpudeck_cli() -> None:
        run([sys.executable, "-m", "tui", "sync", str(src), "--host", "box", "--json"])

    methods: list[tuple[str, Callable[[], object]]] = [
        ("gpudeck warm", gpudeck_warm),
        ("gpudeck cli", gpudeck_cli),
    ]
    if args.against:
        before = Before(args.against, src)
        methods += [("before warm", before.sync), ("before cli", before.cli)]

    for r in range(args.rounds):
        for method, fn in methods:
            shutil.rmtree(lb.agent_dir / "code", ignore_errors=True)  # an empty host
            shutil.rmtree(Path(os.environ["GPUDECK_HOME"]) / "sync", ignore_errors=True)  # nothing hashed
            note(method, "first", timed(fn))
            note(method, "nochange", timed(fn))
        remote = base / f"tar-{r}"
        tar = f"tar -C {src} -cf - . | {' '.join(ssh)} 'mkdir -p {remote} && tar -C {remote} -xf -'"
        note("tar|ssh", "first", timed(run, tar, shell=True))
        target = base / f"rsync-{r}"
        rsync = ["rsync", "-a", "-e", rsync_e, f"{src}/", f"127.0.0.1:{target}/"]
        note("rsync -a", "first", timed(run, rsync))
        note("rsync -a", "nochange", timed(run, rsync))
        edit(src, r)  # the same 11 files for every method: each syncs the edited tree once
        note("rsync -a", "edits", timed(run, rsync))
        note("gpudeck warm", "edits", timed(gpudeck_warm))
        edited = src / f"new_{r}.py"
        edited.write_text(edited.read_text() + "# again\n")  # the CLI sees a change of its own
        for p in sorted(src.rglob("m*.py"))[:10]:
            p.write_text(p.read_text() + "# again\n")
        note("gpudeck cli", "edits", timed(gpudeck_cli))
        if args.against:  # its own edits: the host holds the snapshots synced above
            for p in sorted(src.rglob("m*.py"))[:10]:
                p.write_text(p.read_text() + "# before's warm\n")
            note("before warm", "edits", timed(before.sync))
            for p in sorted(src.rglob("m*.py"))[:10]:
                p.write_text(p.read_text() + "# before's cli\n")
            note("before cli", "edits", timed(before.cli))
    session.close()
    if args.against:
        before.close()
    print(f"medians of {args.rounds} rounds (seconds):")
    print(f"{'method':<14}{'first':>9}{'nochange':>10}{'edits':>9}")
    for method, cases in results.items():
        cells = [
            f"{statistics.median(cases[c]):9.3f}" if c in cases else f"{'-':>9}"
            for c in ("first", "nochange")
        ]
        edits = f"{statistics.median(cases['edits']):9.3f}" if "edits" in cases else f"{'-':>9}"
        print(f"{method:<14}{cells[0]}{' ' + cells[1]}{edits}")
    tar_first = statistics.median(results["tar|ssh"]["first"])
    for method in ("gpudeck warm", "before warm", "gpudeck cli", "before cli"):
        if method in results:
            first_s = statistics.median(results[method]["first"])
            print(f"first sync / tar|ssh, {method}: {first_s / tar_first:.2f}x (target <= 1.2x)")
    lb.server.stop()
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
