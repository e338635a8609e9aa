"""The host's recent GPU detail at 1 Hz, in memory and bounded: what a client that just
(re)connected draws its sparklines from. Job journals only get periodic summaries."""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Deque, Dict, List, Optional

RING_SECONDS = 3600


class GpuRing:
    def __init__(
        self, sample: Callable[[], Dict[str, Any]], interval: float = 1.0, size: int = RING_SECONDS
    ) -> None:
        self._sample = sample
        self._interval = interval
        self._ring: Deque[Dict[str, Any]] = collections.deque(maxlen=size)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def start(self) -> None:
        """Samples only while this serve runs and only if the host has GPUs to sample."""
        self._thread = threading.Thread(target=self._run, name="gpuring", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                sample = self._sample()
            except Exception:
                sample = {"available": False}
            if not sample.get("available"):
                return  # no driver: nothing to keep, and hello already says why
            keep = ("index", "util", "mem_used_mib", "temp_c", "power_w")
            point = {
                "t": round(time.time(), 3),
                "gpus": [{k: g.get(k) for k in keep} for g in sample.get("gpus", [])],
            }
            with self._lock:
                self._ring.append(point)
            self._stopped.wait(self._interval)

    def since(self, t: float) -> List[Dict[str, Any]]:
        with self._lock:
            return [p for p in self._ring if p["t"] > t]
