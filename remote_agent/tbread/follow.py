"""The supervisor's side of TensorBoard in: a thread that reads the job's LOGDIR every POLL seconds
(event files are written in flushes, seconds apart: no need for inotify over a tree) and hands
the points to the supervisor, which journals them like parsed output. A last read when the job
has ended takes what was flushed at its exit."""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Dict, List, Optional

from .logdir import LogdirReader

POLL = 1.0
STATE_FILE = "tensorboard.json"  # in the node's dir: the offsets read so far

Emit = Callable[[List[Dict[str, Any]]], None]


def logdir_of(spec: Dict[str, Any]) -> Optional[str]:
    """The spec's LOGDIR as a path on this host: relative to the job's work dir, `~` expanded."""
    logdir = spec.get("tensorboard")
    if not isinstance(logdir, str) or not logdir:
        return None
    logdir = os.path.expanduser(logdir)
    workdir = os.path.expanduser(str(spec.get("workdir") or "~"))
    return os.path.normpath(os.path.join(workdir, logdir))


class PollingIn:
    """A thread that reads files a job writes every POLL seconds and hands their points on (TensorBoard
    in, Lightning's logger files): `_poll` reads, `_save` keeps where it got to for an adopter."""

    def __init__(self, emit: Emit, name: str) -> None:
        self.emit = emit
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one read at a time: the thread's or the final one
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _poll(self) -> List[Dict[str, Any]]:
        raise NotImplementedError

    def _save(self) -> None:
        raise NotImplementedError

    def read_once(self) -> None:
        with self._lock:
            try:
                points = self._poll()
            except Exception:  # a reader bug must never take the supervisor down
                return
            if points:
                self.emit(points)
                self._save()

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            self.read_once()

    def finish(self) -> None:
        """Stop the thread, then read what the run flushed last."""
        self._stop.set()
        self._thread.join(timeout=30.0)
        self.read_once()


class TensorBoardIn(PollingIn):
    def __init__(self, logdir: str, node_dir: str, emit: Emit) -> None:
        super().__init__(emit, "tensorboard-in")
        self.reader = LogdirReader(logdir, os.path.join(node_dir, STATE_FILE))

    @classmethod
    def start_for(cls, spec: Dict[str, Any], node_dir: str, emit: Emit) -> Optional[TensorBoardIn]:
        logdir = logdir_of(spec)
        # node 0 only: rank 0 is the one that writes TensorBoard in every framework, and other nodes
        # on a shared file system would journal the same points again
        if logdir is None or str(spec.get("node", "0")) != "0":
            return None
        follower = cls(logdir, node_dir, emit)
        follower._thread.start()
        return follower

    def _poll(self) -> List[Dict[str, Any]]:
        return self.reader.poll()

    def _save(self) -> None:
        self.reader.save()
