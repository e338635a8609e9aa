"""Whole lines from an SSH channel, for the agent client's reader thread.

paramiko's file object (`chan.makefile`) grows a long line by concatenating each received piece
onto it and scans the whole line for a newline after every piece: a push of thousands of events
(one line of ~100 KB arriving in pieces of a few KB) is copied and scanned over and over. This
reader keeps one bytearray, scans only the bytes it has not scanned yet and cuts each line once.
Errors are the channel's own (a timeout raises TimeoutError, EOF gives a short read), as with
the file object.
"""

from __future__ import annotations

from typing import Any

RECV_BYTES = 1 << 18


class ChannelLines:
    def __init__(self, chan: Any) -> None:
        self._chan = chan
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline

    def readline(self) -> bytes:
        """One line with its newline; at EOF what is left (b'' when nothing is)."""
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end >= 0:
                return self._take(end + 1)
            self._scanned = len(self._buf)
            data = self._chan.recv(RECV_BYTES)
            if not data:
                return self._take(len(self._buf))
            self._buf += data

    def read(self, size: int) -> bytes:
        """The next `size` bytes; fewer only at EOF."""
        while len(self._buf) < size:
            data = self._chan.recv(max(RECV_BYTES, size - len(self._buf)))
            if not data:
                break
            self._buf += data
        return self._take(min(size, len(self._buf)))

    def _take(self, n: int) -> bytes:
        out = bytes(self._buf[:n])
        del self._buf[:n]  # (a bytearray drops its head without moving the rest)
        self._scanned = 0
        return out
