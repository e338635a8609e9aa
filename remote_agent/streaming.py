"""The first line of every byte-stream subcommand (`receive`, `send`, `hello --stream`).

Over SSH a login shell may print (a chatty .bashrc) and may even read a line of stdin before it
execs the agent. The client skips everything before this line and writes nothing until it has
seen it: by then the shell is gone and every byte it sends reaches the agent.
"""

from __future__ import annotations

import sys

STREAM_MARKER = b"GPUDECK-STREAM 1\n"


def begin_stream() -> None:
    sys.stdout.buffer.write(STREAM_MARKER)
    sys.stdout.buffer.flush()
