"""The supervisor's side of logger files: a thread that looks for the job's Lightning version dir
(discover.py: a few stats a second while none is found; none once found) and then reads it every
POLL seconds while the job prints (tbread.follow.PollingIn): TensorBoard event files through tbread, else CSVLogger's metrics.csv. Node 0 only
(rank 0 writes them). Off with spec.logger_files = false, and when spec.tensorboard names a LOGDIR
(that one is read instead). The found dir and the offsets read are kept in a state file, so an
adopting supervisor goes on where its predecessor stopped."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional

from ..storage.files import write_private_atomic
from ..tbread.follow import PollingIn
from .discover import VersionDirFinder

if TYPE_CHECKING:  # imported once the job's dir is found: each job's supervisor looks, few find one
    from ..tbread.logdir import LogdirReader
    from .csvread import CsvMetricsReader

STATE_FILE = "loggerfiles.json"  # in the node's dir
TB_STATE_FILE = "loggerfiles-tb.json"
CSV_NAME = "metrics.csv"

Emit = Callable[[List[Dict[str, Any]]], None]


def wanted(spec: Dict[str, Any]) -> bool:
    return (
        spec.get("logger_files") is not False
        and not spec.get("tensorboard")
        and not spec.get("watch")
        and str(spec.get("node", "0")) == "0"
    )


class LoggerFilesIn(PollingIn):
    FOLLOWS_OUTPUT = True  # on by default for every job: an idle one's must not poll (issue 33)

    def __init__(self, workdir: str, node_dir: str, emit: Emit, found: Callable[[], None]) -> None:
        super().__init__(emit, "logger-files-in")
        self.node_dir = node_dir
        self.found = found  # told once, when the job's version dir is found
        self.state_path = os.path.join(node_dir, STATE_FILE)
        # the job's version dir is one touched after now (a supervisor starts with its job; an
        # adopter finds the dir its predecessor found in the state file)
        self.finder = VersionDirFinder(workdir, time.time())
        self.dir: Optional[str] = None
        self.events: Optional[LogdirReader] = None
        self.csv: Optional[CsvMetricsReader] = None
        self._find_lock = threading.Lock()  # look() is called from the output reader too (gate.py)
        self._found: Optional[str] = None
        self._load()

    @classmethod
    def start_for(
        cls, spec: Dict[str, Any], node_dir: str, emit: Emit, found: Callable[[], None]
    ) -> Optional[LoggerFilesIn]:
        workdir = spec.get("workdir")
        if not wanted(spec) or not isinstance(workdir, str):
            return None
        follower = cls(os.path.expanduser(workdir), node_dir, emit, found)
        follower._thread.start()
        return follower

    def _load(self) -> None:
        try:
            with open(self.state_path) as f:
                state = json.load(f)
        except (OSError, ValueError):
            return
        if isinstance(state, dict) and isinstance(state.get("dir"), str):
            csv_state = state.get("csv")
            self._use(state["dir"], csv_state if isinstance(csv_state, dict) else {})

    def _save(self) -> None:
        state: Dict[str, Any] = {"dir": self.dir}
        if self.csv is not None:
            state["csv"] = self.csv.state()
        try:
            write_private_atomic(self.state_path, json.dumps(state).encode())
        except OSError:
            pass  # an adopter would look for the dir again and re-read some points at worst
        if self.events is not None:
            self.events.save()

    def _use(self, path: str, csv_state: Dict[str, Any]) -> None:
        self.dir = path
        if csv_state:
            from .csvread import CsvMetricsReader

            self.csv = CsvMetricsReader(
                os.path.join(path, CSV_NAME),
                int(csv_state.get("offset") or 0),
                int(csv_state.get("rows") or 0),
                str(csv_state.get("header") or ""),
            )
        self.found()

    def _reader_kind(self) -> None:
        """Event files or metrics.csv: whichever the logger has made (none yet: look again)."""
        assert self.dir is not None
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        if any("tfevents" in n for n in names):
            from ..tbread.logdir import LogdirReader

            self.events = LogdirReader(self.dir, os.path.join(self.node_dir, TB_STATE_FILE))
        elif CSV_NAME in names:
            from .csvread import CsvMetricsReader

            self.csv = CsvMetricsReader(os.path.join(self.dir, CSV_NAME))

    def look(self) -> bool:
        """Whether the job's version dir is found (looked for now if not yet: a stat or two).
        Takes no lock but its own: the output reader calls it holding the output lock."""
        with self._find_lock:
            if self._found is None:
                self._found = self.finder.look()
            return self._found is not None

    def _poll(self) -> List[Dict[str, Any]]:
        if self.dir is None:
            if not self.look():
                return []
            assert self._found is not None
            self._use(self._found, {})
            self._save()
        if self.events is None and self.csv is None:
            self._reader_kind()
        from .points import csv_points, event_points

        if self.events is not None:
            return event_points(self.events.poll())
        if self.csv is not None:
            return csv_points(self.csv.poll())
        return []
