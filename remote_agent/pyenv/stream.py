"""A build step's output is the job's output: passed through line by line, its tail kept for the cause."""

from __future__ import annotations

import collections
import os
import subprocess
from typing import Deque, List, Mapping, Optional

TAIL_LINES = 200
_ERROR_STARTS = ("ERROR:", "error:", "\u00d7")  # pip's, uv's, uv's resolver report (×)
_DECORATION = " \t\u00d7\u2502\u2570\u2500\u25b6\u251c\u2502"  # uv's report frame: × │ ╰─▶ ├


class StepFailed(Exception):
    """The message is the step's error, one line (the job's cause)."""


def run_step(argv: List[str], env: Mapping[str, str], out_fd: int = 2) -> None:
    """Runs argv with its stdout and stderr written to `out_fd` as they come; StepFailed with its
    error line when it exits non-zero."""
    tail: Deque[str] = collections.deque(maxlen=TAIL_LINES)
    try:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(env)
        )
    except OSError as exc:
        raise StepFailed("%s: %s" % (argv[0], exc.strerror or exc)) from None
    assert proc.stdout is not None
    try:
        with proc.stdout:
            for raw in iter(proc.stdout.readline, b""):
                _write_all(out_fd, raw)
                tail.append(raw.decode("utf-8", "replace").rstrip("\r\n"))
        code = proc.wait()
    except BaseException:  # the job was stopped (lifetime.py): the step's tool goes with it
        _end(proc)
        raise
    if code != 0:
        raise StepFailed(
            error_line(list(tail)) or "%s exited with status %d" % (os.path.basename(argv[0]), code)
        )


def _end(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def error_line(lines: List[str]) -> Optional[str]:
    """The last error a build printed: pip's last `ERROR:` line; uv's last `error:`/`×` line with the
    indented lines that explain it (its report spans several). Else the last line printed."""
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].lstrip().startswith(_ERROR_STARTS):
            if lines[i].startswith("ERROR:"):
                return lines[i].strip()
            parts = [lines[i].strip(_DECORATION)]
            for follow in lines[i + 1 :]:
                if follow[:1] not in (" ", "\t") or not follow.strip():
                    break
                part = follow.strip(_DECORATION)
                parts.append(part[len("cause: ") :] if part.startswith("cause: ") else part)
            return ": ".join(p.rstrip(":") for p in parts if p)
    printed = [line.strip() for line in lines if line.strip()]
    return printed[-1] if printed else None


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # the job's output is gone (a full disk): the build goes on, its cause is still kept
