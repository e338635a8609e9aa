"""The python path each host's probe found, kept across runs: a CLI command that starts cold need
not run the probe (a login shell and an interpreter, ~0.2 s) every time; the agent file is still
checked. An entry is forgotten when the agent it started exits, so the next connect probes again.
Total reader: a missing or damaged file is an empty memo.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path

from .. import paths

_lock = threading.Lock()
Key = tuple[str, str, "str | None", str]  # host name, target, python asked for, agent dir


def memo_path() -> Path:
    return paths.data_dir() / "deployed.json"


def _read() -> dict[str, str]:
    try:
        data = json.loads(memo_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _write(memo: dict[str, str]) -> None:
    with contextlib.suppress(OSError):  # a memo that cannot be kept only costs a probe
        folder = paths.ensure_private(paths.data_dir())
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".deployed-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(memo, f)
        os.replace(tmp, memo_path())


def recall(key: Key) -> str | None:
    with _lock:
        return _read().get(json.dumps(key))


def remember(key: Key, python: str) -> None:
    with _lock:
        memo = _read()
        if memo.get(json.dumps(key)) != python:
            memo[json.dumps(key)] = python
            _write(memo)


def forget(key: Key) -> None:
    with _lock:
        memo = _read()
        if memo.pop(json.dumps(key), None) is not None:
            _write(memo)
