"""Parsing what a job printed after its supervisor stopped reading, by whoever writes its end.

A stop or kill of a job whose supervisor is dead or frozen (orphan.py) ends the tree itself and
journals the end. The output printed since the journal's last heartbeat must be parsed first, or
every metric point printed meanwhile is lost: the same parse an adopter would make (the
supervisor's own, so the records are identical), skipping what the old supervisor already wrote.
"""

from __future__ import annotations

import os
from typing import Any, Dict

from ..storage.journal import JournalWriter
from ..storage.layout import JobFiles
from .lines import LineSplitter
from .lostjob import LostJob, OutputReplay
from .supervisor import Supervisor

CHUNK = 1 << 20


class _Parser(Supervisor):
    """A supervisor used only for its parse (never run): the lines' records, less the replayed ones."""

    def __init__(self, files: JobFiles, spec: Dict[str, Any], lost: LostJob) -> None:
        super().__init__(files, spec)
        self.last_values = lost.last_values
        self._replay = OutputReplay(lost.after_resume)

    def _fresh(self, entries: Any) -> Any:
        return self._replay.fresh(entries)


def journal_unread_output(
    files: JobFiles, spec: Dict[str, Any], lost: LostJob, journal: JournalWriter
) -> int:
    """Journals the records of output.log past lost.resume_offset that the journal lacks; returns
    how many. Call with the job's lock held and its tree gone (the file no longer grows)."""
    parser = _Parser(files, spec, lost)
    splitter = LineSplitter()
    written = 0
    try:
        fd = os.open(str(files.output), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        offset = lost.resume_offset
        while True:
            chunk = os.pread(fd, CHUNK, offset)
            lines = splitter.feed(chunk) if chunk else splitter.flush()
            found = parser._entries_for(lines) if lines else []
            if not chunk:  # the end of the output: points the parser held for the line after them
                found += [("metric", {"values": values}) for values in parser.parser.flush()]
            entries = parser._fresh(found) if found else []
            if entries:
                written += len(journal.append_many(entries))
            if not chunk:
                return written
            offset += len(chunk)
    finally:
        os.close(fd)
