"""An environment's key: what makes two jobs' environments interchangeable."""

from __future__ import annotations

import hashlib
import json
import subprocess
from typing import List, NamedTuple

from ..spec import Environment

KEY_LENGTH = 16  # hex digits: a short directory name keeps scripts' shebang lines short
FORMAT = 1  # bump when the layout of an environment changes: old ones are then not reused

# Runs on the job's interpreter, whatever its version (no f-strings: an old python must answer too).
_IDENTITY = (
    "import json, os, platform, sys\n"
    "base = getattr(sys, '_base_executable', None) or sys.executable\n"
    "print(json.dumps({'version': sys.version, 'implementation': sys.implementation.name,\n"
    "    'machine': platform.machine(), 'base': os.path.realpath(base),\n"
    "    'short': '%d.%d.%d' % sys.version_info[:3]}))\n"
)


class Interpreter(NamedTuple):
    path: str  # as the job named it (`command -v python3` after its setup lines)
    identity: str  # version, implementation, machine and base interpreter: part of the key
    short: str  # 3.11.7, as shown


class InterpreterError(Exception):
    pass


def interpreter(python: str) -> Interpreter:
    """Asks the job's python who it is; InterpreterError naming it when it cannot answer."""
    try:
        done = subprocess.run(
            [python, "-c", _IDENTITY],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise InterpreterError("the job's python %s does not run: %s" % (python, exc)) from None
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    try:
        answer = json.loads(lines[-1])
        short = str(answer["short"])
    except (ValueError, IndexError, KeyError, TypeError):
        last = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no answer"])[-1]
        raise InterpreterError("the job's python %s does not run: %s" % (python, last)) from None
    identity = json.dumps(
        [answer.get(k) for k in ("version", "implementation", "machine", "base")], sort_keys=True
    )
    return Interpreter(python, identity, short)


def environment_key(identity: str, environment: Environment, context: str = "") -> str:
    """sha256 of (format, interpreter, requirement text, pip options[, context]), shortened. The
    context (a container's image id) tells apart interpreters that answer alike in different
    images; a host's environment has none, so its keys are what they were."""
    parts: List[object] = [FORMAT, identity, environment.requirements, list(environment.pip_options)]
    if context:
        parts.append(context)
    digest = hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()
    return digest[:KEY_LENGTH]
