"""Names the likely cause of a failed job from its exit and its last lines of output."""

from __future__ import annotations

import re
from typing import List, Optional

from ..prepare import CAUSE_PREFIX, PREPARE_FAILED

_COMMAND_NOT_FOUND = re.compile(r"(?:exec: )?([^\s:]+): (?:command )?not found|No such file or directory")
_TRACEBACK_LAST = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)\b.*)$")


NCCL_TIMEOUT = "NCCL timeout"  # the client shows this node's cause for the whole job (tui/fleet/states.py)


# torchrun's own ending around a worker's failure: the worker's exception is the cause, not these
WRAPPERS = ("ChildFailedError", "SignalException")
# torch prefixes a worker's traceback lines with its rank: `[rank1]: RuntimeError: …`
_RANK_PREFIX = re.compile(r"^\[(?:default)?rank\d+\]:[ ]?")


def _unprefixed(line: str) -> str:
    return _RANK_PREFIX.sub("", line, count=1)


class LastException:
    """The last exception a traceback in the output ended with (torchrun's wrappers left out), fed
    line by line: a worker's traceback scrolls out of the last lines behind torchrun's report."""

    def __init__(self) -> None:
        self.inside = False
        self.last: Optional[str] = None

    def feed(self, line: str) -> None:
        text = _unprefixed(line.rstrip())
        if text.startswith("Traceback (most recent call last)"):
            self.inside = True
        elif self.inside and text and not text[0].isspace():
            match = _TRACEBACK_LAST.match(text)
            if match:
                self.inside = False
                if not _wrapper(match.group(1)):
                    self.last = match.group(1)[:300]


def _wrapper(exception_line: str) -> bool:
    return exception_line.split(":", 1)[0].rsplit(".", 1)[-1] in WRAPPERS


def failure_cause(
    exit_code: Optional[int],
    signal_name: Optional[str],
    tail: List[str],
    hints: Optional[List[str]] = None,
    last_exception: Optional[str] = None,
) -> Optional[str]:
    """`hints`: what the multi-node pre-flight learnt (the interface, slow round trips), repeated
    where they help: in an NCCL timeout's cause. `last_exception`: LastException's, for a
    traceback that is no longer among the tail's lines."""
    text = "\n".join(tail)
    if exit_code == PREPARE_FAILED:  # a setup line or a preparation step named its own cause
        for line in reversed(tail):
            if line.startswith(CAUSE_PREFIX):
                return line[len(CAUSE_PREFIX) :].strip()[:400]
    if "CUDA out of memory" in text or "OutOfMemoryError" in text:
        return "CUDA out of memory: lower the batch size, use gradient accumulation or mixed precision"
    if "NCCL" in text and (
        "timeout" in text.lower() or "Watchdog caught collective operation timeout" in text
    ):
        cause = NCCL_TIMEOUT + ": a rank stalled or died; check every node's log and the network between them"
        good = [h for h in (hints or []) if isinstance(h, str)][:4]
        return cause + ("; pre-flight: " + "; ".join(good)[:400] if good else "")
    if exit_code == 127:
        match = _COMMAND_NOT_FOUND.search(text)
        what = match.group(1) if match and match.group(1) else "the command"
        return "command not found: %s (check `--setup`: is the environment activated?)" % what
    if exit_code == 126:
        return "command found but not executable (check its permissions)"
    for line in reversed(tail):
        match = _TRACEBACK_LAST.match(_unprefixed(line.strip()))
        if match and "Traceback" in text and not _wrapper(match.group(1)):
            return match.group(1)[:300]
    if last_exception and (exit_code or signal_name):
        return last_exception
    if signal_name:
        if signal_name == "SIGKILL":
            return "killed by SIGKILL (out of host memory? check `dmesg` for the OOM killer)"
        return "terminated by %s" % signal_name
    if exit_code:
        return "exited with code %d" % exit_code
    return None
