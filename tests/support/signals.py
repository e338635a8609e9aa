"""Children that answer Ctrl-C as from a terminal, however pytest was started: a shell starts a
background command (`pytest … &`) with SIGINT ignored, every child inherits that through exec, and
Python then installs no KeyboardInterrupt handler (as OpenSSH, gpudeck keeps an ignored SIGINT
ignored). Tests that send SIGINT start their child with it at its default."""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """A `preexec_fn`: SIGINT back to its default (then Python installs its handler) and unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
