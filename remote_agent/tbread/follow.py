"""The supervisor's side of TensorBoard in: a thread that reads the job's LOGDIR every POLL seconds
(event files are written in flushes, seconds apart: no need for inotify over a tree) and hands
the points to the supervisor, which journals them like parsed output. A last read when the job
has ended takes what was flushed at its exit."""

from __future__ import annotations

import abc
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

if TYPE_CHECKING:
    from .logdir import LogdirReader

POLL = 1.0
# A follower of the job's output (FOLLOWS_OUTPUT) polls at POLL for QUIET_POLLS polls after the
# job's last output or points, then waits QUIET_WAIT or the next output (issue 33: an idle job's
# supervisor wakes for nothing; the last read at the end takes what came meanwhile).
QUIET_POLLS = 5
QUIET_WAIT = 60.0
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


class PollingIn(abc.ABC):
    """A thread that reads files a job writes every POLL seconds and hands their points on (TensorBoard
    in, Lightning's logger files): `_poll` reads, `_save` keeps where it got to for an adopter."""

    FOLLOWS_OUTPUT = False  # True: polls while the job prints (Lightning's logger files)

    def __init__(self, emit: Emit, name: str) -> None:
        self.emit = emit
        self._wake = threading.Event()  # the job printed, or it ended (finish)
        self._stopping = False
        self._printed = False
        self._active = 0  # polls left at POLL (FOLLOWS_OUTPUT)
        self._lock = threading.Lock()  # one read at a time: the thread's or the final one
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def output_came(self) -> None:
        """The job printed (the supervisor's output reader, each chunk: a flag, set once a poll)."""
        if not self._printed:
            self._printed = True
            if self._active <= 0:  # it sleeps for a minute: look now; else its next poll sees the flag
                self._wake.set()

    @abc.abstractmethod
    def _poll(self) -> List[Dict[str, Any]]:
        """The points read since the last poll."""

    @abc.abstractmethod
    def _save(self) -> None:
        """Keep where the reading got to (an adopting supervisor reads on from there)."""

    def read_once(self) -> bool:
        """Whether it found points."""
        with self._lock:
            try:
                points = self._poll()
            except Exception:  # a reader bug must never take the supervisor down
                return False
            if points:
                self.emit(points)
                self._save()
            return bool(points)

    def _run(self) -> None:
        while True:
            quiet = self.FOLLOWS_OUTPUT and self._active <= 0
            self._wake.wait(QUIET_WAIT if quiet else POLL)
            self._wake.clear()
            if self._stopping:
                return
            if self._printed:
                self._printed = False
                self._active = QUIET_POLLS
            if self.read_once():
                self._active = QUIET_POLLS
            else:
                self._active -= 1

    def finish(self) -> None:
        """Stop the thread, then read what the run flushed last."""
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=30.0)
        self.read_once()


class TensorBoardIn(PollingIn):
    def __init__(self, logdir: str, node_dir: str, emit: Emit) -> None:
        super().__init__(emit, "tensorboard-in")
        from .logdir import LogdirReader  # here: every supervisor imports PollingIn, few read a LOGDIR

        self.reader: LogdirReader = LogdirReader(logdir, os.path.join(node_dir, STATE_FILE))

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
