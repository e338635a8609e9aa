"""Whether what a journal gained can matter to a log follow (issue 33: CPU per followed line).

A follow waits on the job's end, the output cap's hole and an adoption, all journaled as state or
event records. A trainer's line adds a metric record a moment after its bytes, and folding the
whole job view for it (a JSON parse, the fold, the lock's flock, the state object) was most of
serve's CPU per followed line. So the journal's new complete lines are first looked at as bytes:
when each is a routine record (metric, points, heartbeat, gpu: the writer puts seq, t and kind
first), the fold waits for the next record that matters or the periodic look at the lock.
"""

from __future__ import annotations

import os
import re

# A routine record's start, at a line's start (a nested "kind" inside a record never is).
_ROUTINE = re.compile(
    rb'^\{"seq":\d+,(?:"last":\d+,)?"t":[^,]*,"kind":"(?:metric|points|heartbeat|gpu)"', re.M
)
MAX_LOOK = 256 * 1024  # more new bytes than this at once: fold them (a burst, not a line)


class JournalNews:
    """The journal's bytes looked at so far, from an offset the caller's last fold reached."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offset = 0

    def only_routine(self, size: int) -> bool:
        """True when every complete line from the offset up to `size` bytes is a routine record
        (the offset then moves past them); False: fold (something else came, or it cannot tell)."""
        if size < self.offset or size - self.offset > MAX_LOOK:
            return False  # cut under us, or a burst
        if size == self.offset:
            return True
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            data = os.pread(fd, size - self.offset, self.offset)
        except OSError:
            return False
        finally:
            os.close(fd)
        end = data.rfind(b"\n") + 1  # a line still being written is looked at once it is whole
        if data.count(b"\n", 0, end) != len(_ROUTINE.findall(data, 0, end)):
            return False
        self.offset += end
        return True
