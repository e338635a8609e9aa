"""The torch / CUDA / NCCL versions a job's interpreter sees on this host, for the pre-flight
comparison across nodes: asked in the job's own environment (login shell, setup lines, PATH),
because that, not the agent's python, is what the job will import."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any, Dict, List, Optional

from ..supervision.jobspec import shell_script

MARKER = "GPUDECK-VERSIONS "
TIMEOUT_S = 90.0
# Constant: no request value is ever spliced into it (the interpreter and setup travel as argv).
_SCRIPT = """\
import json, platform
out = {"python": platform.python_version(), "torch": None, "cuda": None, "nccl": None, "error": None}
try:
    import torch
    out["torch"] = torch.__version__
    out["cuda"] = torch.version.cuda
    try:
        v = torch.cuda.nccl.version() if torch.cuda.is_available() else None
        out["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else (str(v) if v else None)
    except Exception:
        pass
except Exception as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
print("GPUDECK-VERSIONS " + json.dumps(out), flush=True)
"""


class VersionsError(Exception):
    pass


def versions(python: Any, setup: Any = None, path: Any = None, workdir: Any = None) -> Dict[str, Any]:
    """{"python", "torch", "cuda", "nccl", "error"}: error says why torch (or the interpreter) failed."""
    if not isinstance(python, str) or not python or "\n" in python:
        raise VersionsError("python: expected the job's interpreter, got %r" % (python,))
    lines = setup if setup is not None else []
    if not isinstance(lines, list) or not all(isinstance(s, str) for s in lines):
        raise VersionsError("setup: expected a list of shell lines")
    if path is not None and not isinstance(path, str):
        raise VersionsError("path: expected a string")
    cwd = os.path.expanduser(workdir) if isinstance(workdir, str) and workdir else os.path.expanduser("~")
    if not os.path.isdir(cwd):
        cwd = os.path.expanduser("~")
    argv: List[str] = ["bash", "-lc", shell_script(lines, path), "gpudeck-versions", python, "-c", _SCRIPT]
    out: Dict[str, Any] = {"python": None, "torch": None, "cuda": None, "nccl": None, "error": None}
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, cwd=cwd, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        out["error"] = "%s did not answer within %d s" % (python, TIMEOUT_S)
        return out
    except OSError as exc:
        out["error"] = "could not run bash: %s" % exc
        return out
    found = _parse(done.stdout.decode("utf-8", "replace"))
    if found is None:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        out["error"] = "%s: %s" % (python, err[-1][:200] if err else "exit code %d" % done.returncode)
        return out
    out.update({k: found.get(k) for k in out})
    return out


def _parse(text: str) -> Optional[Dict[str, Any]]:
    for line in reversed(text.splitlines()):  # a login profile may print before it
        if line.startswith(MARKER):
            try:
                obj = json.loads(line[len(MARKER) :])
            except ValueError:
                return None
            return obj if isinstance(obj, dict) else None
    return None
