"""Finding a lost job a new supervisor: whoever sees a job `lost` (its supervisor gone, its end
not journaled) calls adopt_if_lost. Processes of the job still live: a new supervisor adopts them
(`run --adopt`). None left: its end is journaled at once, so no job stays `lost` forever.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from typing import Dict, Optional

from ..jobstate import supervisor_alive
from ..storage.files import open_private, write_private_atomic
from ..storage.journal import JournalWriter
from ..storage.layout import JobFiles
from .control import read_control
from .jobspec import job_key, load_spec
from .launcher import spawn_supervisor
from .lostjob import read_lost_job, unknown_end
from .proctree import job_tree
from .watchspec import is_watch

CUT_JOURNAL_END = {
    "state": "exited",
    "exit_code": None,
    "signal": None,
    "code_unknown": True,
    "cause": "exit code unknown: its journal was emptied or cut, its supervisor gone and no process left",
}
LOST_WHY = "lost.why"  # a note of why the supervisor went, by whoever ended it (serving/frozen.py)
SPAWN_AGAIN_AFTER = 5.0  # one adopter at a time per job: a listing every second starts no crowd

_spawned: Dict[str, float] = {}
_spawned_lock = threading.Lock()


def adopt_if_lost(files: JobFiles, found_by: str) -> Optional[str]:
    """ "adopting" when processes of the job live and a new supervisor is (being) started for them,
    "ended" when none is left and the end was journaled here, None when there is nothing to do."""
    if supervisor_alive(files.lock):
        return None
    try:
        spec = load_spec(files.spec)
        key = job_key(spec)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a launch that never finished: not a job that ran
    if spec.get("placement"):
        return (
            None  # a Slurm node: its end comes from Slurm's record (slurm/states.py), never a local adopter
        )
    if is_watch(spec):
        return None  # a watch job follows a run gpudeck did not start: it has no processes to adopt
    if not job_tree(key, None):
        outcome = record_lost_end(files)
        if outcome != "unread":
            return outcome
        # Nothing runs, but output printed before the end may be unparsed: an adopter reads it first.
    if not os.access(str(files.dir), os.W_OK):
        return None  # a read-only home: no supervisor could write its journal; readers keep saying `lost`
    now = time.monotonic()
    with _spawned_lock:
        last = _spawned.get(str(files.dir))
        if last is not None and now - last < SPAWN_AGAIN_AFTER:
            return "adopting"
        _spawned[str(files.dir)] = now
    # Whoever ended a frozen supervisor noted why; the adopter that wins the lock takes the note
    # (adopter.py), as the keeper, woken by the end, and the listing that ended it both spawn one.
    try:
        spawn_supervisor(
            files.dir, files.supervisor_log, adopt="its supervisor was gone (found by %s)" % found_by
        )
    except OSError:
        return None  # e.g. a full disk: the job stays lost (stop and kill still work) until a later try
    return "adopting"


def note_lost_why(files: JobFiles, why: str) -> None:
    """Before ending a job's supervisor: the why its adopter journals, whoever adopts it."""
    try:
        write_private_atomic(files.dir / LOST_WHY, why[:300].encode("utf-8"))
    except OSError:
        pass


def take_lost_why(files: JobFiles) -> Optional[str]:
    """The noted why, once (the note goes as it is read)."""
    path = files.dir / LOST_WHY
    try:
        with open(str(path), "rb") as f:
            why = f.read(300).decode("utf-8", "replace")
        os.unlink(str(path))
    except OSError:
        return None
    return why or None


def record_lost_end(files: JobFiles) -> Optional[str]:
    """For a lost job none of whose processes is left: "ended" when its end was journaled here,
    "unread" when output.log holds bytes past what the journal parsed (an adopter must read them
    first), None when someone holds the lock (an adopter got there first) or nothing is needed."""
    try:
        lock_fd = open_private(files.lock, os.O_RDWR | os.O_CREAT)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None
        lost = read_lost_job(files.journal)
        if lost.ended or (not lost.started and not files.journal.exists()):
            return None
        if lost.started and output_size(files) > lost.resume_offset:
            return "unread"
        # A journal without its `starting` record was emptied or cut: how the job ended is unknown.
        asked = read_control(files.control)  # a stop or kill it got before its supervisor let go
        if not lost.started:
            end = CUT_JOURNAL_END
        else:
            end = unknown_end(lost, asked[0], asked[2]) if asked else unknown_end(lost)
        try:
            journal = JournalWriter(files.journal)
        except OSError:
            return None  # a read-only home: readers keep saying `lost`
        try:
            return "ended" if journal.append("state", **end) is not None else None
        finally:
            journal.close()
    finally:
        os.close(lock_fd)


def output_size(files: JobFiles) -> int:
    try:
        return os.stat(str(files.output)).st_size
    except OSError:
        return 0
