"""Running Slurm's client tools: argv lists (never a shell), bounded time, text out."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import List, Optional, Sequence, Tuple

TOOLS = ("sbatch", "squeue", "sacct", "scancel", "scontrol")
TIMEOUT = 30.0


class SlurmError(Exception):
    """A Slurm command that failed; the message is one line naming it and what it said."""


def run(argv: Sequence[str], timeout: float = TIMEOUT, stdin: Optional[str] = None) -> Tuple[int, str, str]:
    """(exit code, stdout, stderr); a missing tool or a timeout is a SlurmError."""
    try:
        proc = subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except FileNotFoundError:
        raise SlurmError("%s: not found on PATH" % argv[0]) from None
    except subprocess.TimeoutExpired:
        raise SlurmError("%s: no answer within %.0f s" % (argv[0], timeout)) from None
    return proc.returncode, proc.stdout, proc.stderr


def checked(argv: Sequence[str], timeout: float = TIMEOUT) -> str:
    """stdout of a command that must succeed; SlurmError with its first error line otherwise."""
    code, out, err = run(argv, timeout)
    if code != 0:
        said = (err.strip() or out.strip() or "no output").splitlines()[0][:300]
        raise SlurmError("%s exited %d: %s" % (argv[0], code, said))
    return out


def missing_tools() -> List[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def version() -> Optional[str]:
    """`22.05.8` from `sbatch --version` (`slurm 22.05.8`), None when it does not say."""
    try:
        out = checked(["sbatch", "--version"], 10.0)
    except SlurmError:
        return None
    found = re.search(r"(\d+\.\d+(\.\d+)?)", out)
    return found.group(1) if found else None


def user() -> str:
    """Whose jobs squeue lists: this agent's user (Slurm's own idea of it)."""
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name
