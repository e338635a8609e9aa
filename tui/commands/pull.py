"""`gpudeck pull JOB PATH [DEST]`: copy a file or directory of the job's working directory here."""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..actions.pull import Pulled, PullProgress, pull
from ..errors import EXIT_ERROR
from ..printable import printable, warn
from ..session import Session
from .answer import add_json

PROGRESS_AFTER = 1.0  # seconds: a quick pull prints no progress at all


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "pull",
        help="copy a file or directory of a job's working directory here (again: only what changed)",
        description="Copy PATH (relative to the job's working directory) into DEST as DEST/NAME, "
        "NAME being PATH's last part. Files already there with the same size and time are not sent "
        "again; symlinks come as links, file modes are kept; nothing here is deleted. Works while "
        "the job runs and after it ended.",
    )
    p.add_argument("job", help="job id, id prefix or name")
    p.add_argument(
        "path", metavar="PATH", help="in the job's working directory (an absolute path must be inside it)"
    )
    p.add_argument(
        "dest", metavar="DEST", nargs="?", help="local directory to copy into (default: the current one)"
    )
    p.add_argument("--node", default=None, help="which node's working directory (default: node 0)")
    add_json(p, "job, node, host, path, dest, type, copied [{path, size}], links, skipped, unchanged, bytes")


def run(args: argparse.Namespace, session: Session) -> int:
    meter = None if args.json else Meter()  # --json: stdout is the answer, stderr only its problems
    pulled = pull(session, args.job, args.path, args.dest, args.node, progress=meter)
    if meter is not None:
        meter.done(pulled)
    for rel_path, why in ((s["path"], s["why"]) for s in pulled.to_json()["skipped"]):
        warn(f"gpudeck: pull: skipped {rel_path}: {why}")
    if args.json:
        print(json.dumps(pulled.to_json(), indent=2))
    else:
        print(printable(summary(pulled)))
    return EXIT_ERROR if pulled.got.skipped else 0


def summary(pulled: Pulled) -> str:
    copied = len(pulled.got.copied)
    near = os.path.relpath(pulled.dest)
    where = pulled.dest if near.startswith("..") else near
    links = f", {len(pulled.got.links)} links" if pulled.got.links else ""
    same = f"; {pulled.unchanged} unchanged" if pulled.unchanged else ""
    if not copied and not pulled.got.links and not pulled.got.dirs:
        return f"{where}: up to date ({pulled.unchanged} files)"
    return f"{where}: {copied} files copied ({size_text(pulled.got.bytes)}){links}{same}"


class Meter:
    """Progress on stderr once a pull has run a second: rewritten in place on a terminal, a line
    every 10 s otherwise (a log file gets no carriage returns)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = 0.0
        self.drawn = False

    def __call__(self, p: PullProgress) -> None:
        if p.seconds < PROGRESS_AFTER or p.seconds - self.shown < (0.2 if self.tty else 10.0):
            return
        self.shown = p.seconds
        text = (
            f"pull: {p.files}/{p.files_total} files, {size_text(p.bytes)}/{size_text(p.bytes_total)}, "
            f"{size_text(p.bytes / p.seconds)}/s"
        )
        sys.stderr.write(f"\r{text}\x1b[K" if self.tty else text + "\n")
        sys.stderr.flush()
        self.drawn = self.tty

    def done(self, pulled: Pulled) -> None:
        if self.drawn:
            sys.stderr.write("\n")
        if pulled.seconds >= PROGRESS_AFTER:
            rate = pulled.got.bytes / pulled.seconds
            sys.stderr.write(
                f"pull: {size_text(pulled.got.bytes)} in {pulled.seconds:.1f} s ({size_text(rate)}/s, "
                f"{size_text(pulled.wire_bytes)} sent)\n"
            )


def size_text(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"
