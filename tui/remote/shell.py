"""A shell (or one command) on a host over its SSH connection: `gpudeck ssh`. Interactive: a PTY the
size of this terminal (resized with it), this terminal in raw mode until the shell ends. With a
command: its stdout and stderr here, its exit status returned."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import sys
import termios
import tty
from collections.abc import Iterator
from typing import Any

import paramiko

from .ssh_connect import Connection

CHUNK = 65536


def run_remote(conn: Connection, command: str, interactive: bool) -> int:
    chan: paramiko.Channel = conn.transport.open_session()
    if interactive:
        size = shutil.get_terminal_size()
        chan.get_pty(term=os.environ.get("TERM", "xterm-256color"), width=size.columns, height=size.lines)
    chan.exec_command(command)
    if interactive:
        with _raw(sys.stdin.fileno()), _resizes(chan):
            _pump(chan, sys.stdin.fileno())
    else:
        _pump(chan, sys.stdin.fileno() if not sys.stdin.isatty() else None)
    status: int = chan.recv_exit_status()
    chan.close()
    return status


def _pump(chan: paramiko.Channel, stdin: int | None) -> None:
    out, err = sys.stdout.buffer, sys.stderr.buffer
    watched: list[Any] = [chan] + ([stdin] if stdin is not None else [])
    while True:
        ready, _, _ = select.select(watched, [], [], 0.5)
        if chan in ready:
            if chan.recv_stderr_ready():
                err.write(chan.recv_stderr(CHUNK))
                err.flush()
            if chan.recv_ready():
                data = chan.recv(CHUNK)
                out.write(data)
                out.flush()
            elif (
                chan.exit_status_ready()
                and not chan.recv_stderr_ready()
                or chan.eof_received
                and not chan.recv_stderr_ready()
            ):
                break
        if stdin is not None and stdin in ready:
            data = os.read(stdin, CHUNK)
            if data:
                chan.sendall(data)
            else:
                chan.shutdown_write()
                watched.remove(stdin)
        if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
            break


@contextlib.contextmanager
def _raw(fd: int) -> Iterator[None]:
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


@contextlib.contextmanager
def _resizes(chan: paramiko.Channel) -> Iterator[None]:
    def resized(_signum: int, _frame: object) -> None:
        size = shutil.get_terminal_size()
        with contextlib.suppress(paramiko.SSHException, OSError):
            chan.resize_pty(width=size.columns, height=size.lines)

    before = signal.signal(signal.SIGWINCH, resized)
    try:
        yield
    finally:
        signal.signal(signal.SIGWINCH, before)
