"""The py-spy route: `py-spy dump --pid N` (a wheel on PyPI: `pip install py-spy`). Found on the agent's
PATH or beside the agent's python; GPUDECK_PY_SPY names another one, or `off` to use only the
faulthandler route. py-spy reads the process's memory (ptrace): it needs the same user and a
kernel.yama.ptrace_scope that allows it, or CAP_SYS_PTRACE."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Optional, Tuple

PY_SPY_VAR = "GPUDECK_PY_SPY"
TIMEOUT = 20.0  # seconds one process's dump may take (py-spy pauses it while it reads)
MAX_STACK = 256 * 1024  # bytes of one process's stack text kept


def find() -> Optional[str]:
    asked = os.environ.get(PY_SPY_VAR)
    if asked is not None:
        return None if asked in ("", "off") else asked
    found = _which("py-spy")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return beside if os.access(beside, os.X_OK) else None


def dump(py_spy: str, pid: int) -> Tuple[Optional[str], str]:
    """(the stack text, "") or (None, why py-spy could not take it, in one line)."""
    try:
        done = subprocess.run(
            [py_spy, "dump", "--pid", str(pid)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return None, "py-spy took over %.0f s" % TIMEOUT
    except OSError as exc:
        return None, "py-spy could not run: %s" % (exc.strerror or exc)
    text = done.stdout[:MAX_STACK].decode("utf-8", "replace")
    if done.returncode == 0 and text.strip():
        return text, ""
    return None, "py-spy: %s" % _why(done.stderr.decode("utf-8", "replace") or text, done.returncode)


def _why(said: str, code: int) -> str:
    lines = [line.strip() for line in said.splitlines() if line.strip()]
    line = lines[0] if lines else "exit code %d" % code
    if "ermission" in said or "ptrace" in said.lower():
        line += " (not permitted: same user and kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE)"
    return line[:300]


def _which(name: str) -> Optional[str]:
    import shutil  # here: every supervisor imports this module, few ever dump stacks

    return shutil.which(name)
