"""A child process a part can always get rid of: own session, stdout parsed as JSON lines, stderr kept.

CUDA can hang (a wedged driver, a stuck NCCL call): nothing here waits without a timeout, and
`kill()` takes the child's whole process group (DataLoader workers included).
"""

from __future__ import annotations

import collections
import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

Predicate = Callable[[dict[str, Any]], bool]


class Child:
    def __init__(self, argv: list[str], cwd: str, env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        self.objects: list[dict[str, Any]] = []  # every JSON object printed so far
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._err: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                obj = json.loads(raw)
            except ValueError:
                self._err.append(raw.rstrip())  # not ours to parse: keep it with stderr for the reason
                continue
            if isinstance(obj, dict):
                self.objects.append(obj)
                self._lines.put(obj)
        self._lines.put(None)

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self._err.append(raw.rstrip())

    def next_object(self, want: Predicate, timeout: float) -> dict[str, Any] | None:
        """The next printed object for which `want` is true; None at exit or after `timeout` s."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                obj = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if obj is None:
                self._lines.put(None)  # stays at the end for the next caller
                return None
            if want(obj):
                return obj
        return None

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if it still runs after `timeout` s."""
        try:
            return self.proc.wait(timeout=max(0.0, timeout))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # uninterruptible sleep in the driver: leave it, say so
            self._err.append(f"pid {self.proc.pid} survived SIGKILL for 10 s")

    def stderr_tail(self, lines: int = 3) -> str:
        """The last lines it printed on stderr, as one line (tracebacks end with the error itself)."""
        tail = [line for line in self._err if line.strip()][-lines:]
        return " | ".join(t.strip() for t in tail)[-600:]
