"""`gpudeck-agent pty -- CMD...`: runs CMD with a pseudo-terminal as its stdout and stderr, and
copies what it draws to our own stdout (the job's output.log).

Rich progress bars (Lightning's default) draw only their last frame into a pipe, and Keras'
`verbose=1` bar only redraws mid-epoch on a terminal; a job with `"pty": true` runs under this
relay so it prints what its user would see. The relay is part of the job's process group (the
supervisor starts it as the session leader); the stop signal, which the supervisor sends to the
command's own process only, is passed on to CMD, and the relay outlives it to copy CMD's last
words, then exits as CMD did.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import struct
import subprocess
import sys
import termios
from typing import Any, List, Tuple

# Wide enough that a Rich bar keeps its metrics column (80 columns cut it off).
COLUMNS, ROWS = 200, 50


def _open_pty() -> Tuple[int, int]:
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # "\n" stays "\n" in output.log (a terminal would write "\r\n")
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    return master, slave


def _copy(master: int, out: int) -> None:
    """Until every writer of the terminal has closed it (EIO on Linux)."""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            if exc.errno == errno.EIO:
                return
            raise
        if not chunk:
            return
        while chunk:
            chunk = chunk[os.write(out, chunk) :]


# What a stop may send (spec.stop_signal), passed on to CMD; SIGKILL needs no passing on.
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)


def relay(argv: List[str]) -> int:
    child: List[int] = []  # CMD's pid, once started
    early: List[int] = []  # signals that came before it was

    def forward(signum: int, frame: Any) -> None:
        if child:
            try:
                os.kill(child[0], signum)
            except ProcessLookupError:
                pass
        else:
            early.append(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    master, slave = _open_pty()
    env = dict(os.environ)
    env.setdefault("TERM", "xterm-256color")
    env.setdefault("COLUMNS", str(COLUMNS))
    env.setdefault("LINES", str(ROWS))
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            env=env,
            close_fds=True,
            # CMD starts with the default dispositions, not our handlers'.
            preexec_fn=_default_signals,
        )
    except OSError as exc:
        sys.stderr.write("gpudeck-agent pty: could not start %s: %s\n" % (argv[0], exc))
        return 127
    finally:
        os.close(slave)
    child.append(proc.pid)
    for signum in early:
        forward(signum, None)
    try:
        _copy(master, sys.stdout.fileno())
    finally:
        os.close(master)
    code = proc.wait()
    if code < 0:  # died of a signal: so do we, so the supervisor reports the same
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        return 128 - code
    return code


def _default_signals() -> None:
    for sig in FORWARDED:
        signal.signal(sig, signal.SIG_DFL)
