"""`metrics-serve AGENT_DIR ADDR:PORT`: the host's own /metrics, for teams that scrape hosts directly.

Opt-in per host (hosts.toml `metrics_listen`): the client asks its agent with the `metrics_listen`
op, which starts this detached daemon unless one serves that address already. One daemon per agent
dir holds `metrics.lock` and says where it listens in `metrics.json`; it leaves when the agent dir
goes, or when asked to stop (SIGTERM, from a `metrics_listen` with another address or none).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..jobstate import supervisor_alive
from ..storage.files import open_private, write_private_atomic
from ..supervision.launcher import spawn_detached
from .exposition import render
from .server import metrics_server

LOCK_NAME = "metrics.lock"
STATE_NAME = "metrics.json"
LOG_NAME = "metrics.log"
CACHE_S = 1.0  # scrapes within a second share one reading
KEEP_ENDED_S = 600.0


def parse_listen(text: Any) -> Tuple[str, int]:
    """ "ADDR:PORT" → (addr, port); ValueError naming what is wrong."""
    if not isinstance(text, str):
        raise ValueError('listen: expected "ADDRESS:PORT", e.g. "127.0.0.1:9401"')
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError('listen: expected "ADDRESS:PORT", e.g. "127.0.0.1:9401", got %r' % (text,))
    return host.strip("[]"), int(port)


def current(root: Path) -> Optional[Dict[str, Any]]:
    """{"listen", "pid"} of the daemon serving now, or None."""
    try:
        if not supervisor_alive(root / LOCK_NAME):
            return None
        state = json.loads((root / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def ensure(root: Path, listen: Optional[str], command: List[str]) -> Optional[Dict[str, Any]]:
    """The daemon serving `listen` (started when none does; another address's is stopped first);
    `listen` None stops it. Returns what serves now ({"listen", "pid"}) or None."""
    if listen is not None:
        parse_listen(listen)
    running = current(root)
    if running is not None and running.get("listen") == listen:
        return running
    if running is not None and isinstance(running.get("pid"), int):
        try:
            os.kill(running["pid"], signal.SIGTERM)
        except OSError:
            pass
        deadline = time.monotonic() + 5.0
        while current(root) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
    if listen is None:
        return None
    proc = spawn_detached(command + ["metrics-serve", str(root), listen], root / LOG_NAME, "metrics")
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        running = current(root)
        if running is not None and running.get("pid") == proc.pid:
            return running
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise OSError("the metrics server did not start (see %s)" % (root / LOG_NAME,))


def serve(root: Path, listen: str) -> int:
    """The daemon: 0 when it left, 1 when it could not listen, 3 when another one serves."""
    from ..probes.gpu import default as default_nvml
    from ..serving.jobs import JobTable
    from .hostdata import host_snapshot

    host, port = parse_listen(listen)
    lock_fd = open_private(root / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 3
    jobs, nvml = JobTable(root), default_nvml()
    lock = threading.Lock()
    at = [float("-inf")]
    text = [""]

    def body() -> str:
        with lock:
            if time.monotonic() - at[0] >= CACHE_S:
                text[0] = render(host_snapshot(jobs, nvml, KEEP_ENDED_S))
                at[0] = time.monotonic()
            return text[0]

    try:
        server = metrics_server(host, port, body)
    except OSError as exc:
        print("metrics-serve: cannot listen on %s: %s" % (listen, exc), flush=True)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    write_private_atomic(
        root / STATE_NAME, json.dumps({"listen": listen, "pid": os.getpid()}).encode("utf-8")
    )
    threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
    while not stop.wait(5.0) and root.is_dir():
        pass
    server.shutdown()
    server.server_close()
    return 0
