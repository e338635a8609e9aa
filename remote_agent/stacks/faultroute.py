"""The faulthandler route, for a program that opted in: at its start it registers
    faulthandler.register(signal.SIGURG, file=open(<GPUDECK_STACKS_DIR>/<its pid>.txt, "a"),
                          all_threads=True, chain=False)
(the reference trainer does: trainer/stacks.py). SIGURG because nothing else in a job uses it: the
supervisor takes SIGUSR1/SIGUSR2, Slurm's warning is USR1 and its kill USR2, torchrun handles
TERM/INT/HUP/QUIT, PyTorch Lightning takes USR1; and its default action is to ignore, so a process
that did not opt in is never hurt by it (it is only sent to a process that catches it anyway).
faulthandler writes from its C signal handler, so a thread stuck in a collective still answers."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Dict, Iterable, Optional, Tuple

from ..storage.files import ensure_private_dir

STACK_SIGNAL = signal.SIGURG
STACKS_VAR = "GPUDECK_STACKS_DIR"  # set in every job's environment: where the per-process files go
WAIT = 3.0  # seconds a process has to write its stacks
SETTLED = 0.2  # a file that stopped growing for this long is complete
MAX_STACK = 256 * 1024


def stacks_dir(node_dir: Path) -> Path:
    return node_dir / "stacks"


def make_stacks_dir(node_dir: Path) -> Optional[Path]:
    """Made (0700) before the command starts, so a program only opens its file; None when it cannot be."""
    try:
        return ensure_private_dir(stacks_dir(node_dir))
    except OSError:
        return None


def catches(pid: int, signum: int = STACK_SIGNAL) -> bool:
    """The process has a handler for the signal (the SigCgt mask of /proc/PID/status)."""
    try:
        with open("/proc/%d/status" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def _size(path: Path) -> Optional[int]:
    try:
        return path.stat().st_size
    except OSError:
        return None


def prune(directory: Path) -> None:
    """Empty files of processes that ended (a DataLoader's workers come and go each epoch) go; a
    file with stacks in it stays: it was what a process said."""
    try:
        names = os.listdir(str(directory))
    except OSError:
        return
    for name in names:
        pid = name[:-4] if name.endswith(".txt") else ""
        if pid.isdigit() and not os.path.exists("/proc/%s" % pid) and _size(directory / name) == 0:
            try:
                os.unlink(str(directory / name))
            except OSError:
                pass


def take(node_dir: Path, pids: Iterable[int]) -> Dict[int, Tuple[Optional[str], str]]:
    """pid → (its stacks' text, "") or (None, why not), for processes that catch STACK_SIGNAL."""
    directory = stacks_dir(node_dir)
    prune(directory)
    before: Dict[int, int] = {}
    answers: Dict[int, Tuple[Optional[str], str]] = {}
    for pid in pids:
        size = _size(directory / ("%d.txt" % pid))
        if size is None:
            answers[pid] = (
                None,
                "catches SIG%s but has no %s/%d.txt" % (STACK_SIGNAL.name[3:], directory.name, pid),
            )
            continue
        try:
            os.kill(pid, STACK_SIGNAL)
        except OSError as exc:
            answers[pid] = (None, "could not signal it: %s" % (exc.strerror or exc))
            continue
        before[pid] = size
    sizes = dict(before)
    changed = time.monotonic()
    deadline = changed + WAIT
    while before and time.monotonic() < deadline:
        time.sleep(0.05)
        now = {pid: _size(directory / ("%d.txt" % pid)) or 0 for pid in before}
        if now != sizes:
            sizes, changed = now, time.monotonic()
        elif all(sizes[p] > before[p] for p in before) and time.monotonic() - changed >= SETTLED:
            break
    for pid, start in before.items():
        answers[pid] = _read_new(directory / ("%d.txt" % pid), start)
    return answers


def _read_new(path: Path, start: int) -> Tuple[Optional[str], str]:
    try:
        with open(str(path), "rb") as f:
            f.seek(start)
            data = f.read(MAX_STACK)
    except OSError as exc:
        return None, "could not read %s: %s" % (path.name, exc.strerror or exc)
    if not data.strip():
        return None, "wrote no stacks within %.0f s of SIG%s" % (WAIT, STACK_SIGNAL.name[3:])
    return data.decode("utf-8", "replace"), ""
