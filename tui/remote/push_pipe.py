"""An SSH channel's input handed to its consumer as it arrives, on paramiko's transport thread.

paramiko's transport thread decrypts each packet and feeds the channel's `in_buffer`; a reader
thread then wakes on a condition and takes the GIL from it: two thread handoffs per packet, about
a tenth of a millisecond each on a busy 2-core host, on the path of every line `logs -f` prints.
Installed as the channel's `in_buffer`, this pipe calls the consumer right there instead.

What the reader thread did besides reading moves to one watchdog thread per channel: it sends the
window adjusts (never from the transport thread, which must stay free to finish a key exchange),
and it ends the stream when the channel closes, the consumer fails, or the agent falls silent for
longer than the silence limit (time spent inside the consumer, e.g. a blocked stdout, is not silence).
The consumer must not block for long: while it runs, nothing else on the connection is read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import paramiko
from paramiko.buffered_pipe import BufferedPipe
from paramiko.common import cMSG_CHANNEL_WINDOW_ADJUST

from .transport import Consumer, EndHandler, TransportError


class PushPipe(BufferedPipe):
    def __init__(self, chan: paramiko.Channel, consumer: Consumer) -> None:
        super().__init__()
        self._chan = chan
        self._consumer = consumer
        self._window_owed = 0  # consumed bytes the server may send again, not yet granted
        self._consumed = 0  # bytes consumed since the channel's window was last told
        self._owed_lock = threading.Lock()
        self.changed = threading.Event()  # closed, failed, or a window adjust due: the watchdog looks
        self.last_data = time.monotonic()
        self.busy = False  # inside the consumer
        self.failure: str | None = None
        self.ended = False  # the stream was ended: later bytes are dropped

    def feed(self, data: bytes) -> None:
        """paramiko's transport thread, one packet's data."""
        if self.ended:
            return
        self.busy = True
        try:
            self._consumer(data)  # paramiko's get_binary(): bytes already
        except TransportError as exc:  # the stream is out of step (the consumer says why)
            self.failure, self.ended = str(exc), True
        except Exception as exc:  # never into paramiko's thread: it would drop the whole connection
            self.failure, self.ended = f"reader failed: {exc}", True
        finally:
            self.busy = False
            self.last_data = time.monotonic()
        # The channel grants nothing below its threshold: tell it only past that (a call less a packet).
        self._consumed += len(data)
        if self._consumed > self._chan.in_window_threshold:
            due = self._chan._check_add_window(self._consumed)  # bookkeeping only: returns what to grant
            self._consumed = 0
            if due > 0:
                with self._owed_lock:
                    self._window_owed += due
                self.changed.set()
        if self.ended:
            self.changed.set()

    def close(self) -> None:
        """paramiko: EOF or the channel closed (it may hold the channel's lock: only flag it)."""
        super().close()
        self.changed.set()

    @property
    def closed(self) -> bool:
        return bool(self._closed)

    def grant_window(self) -> None:
        """Send the window adjust owed, from the watchdog thread."""
        with self._owed_lock:
            owed, self._window_owed = self._window_owed, 0
        if owed <= 0:
            return
        m = paramiko.Message()
        m.add_byte(cMSG_CHANNEL_WINDOW_ADJUST)
        m.add_int(self._chan.remote_chanid)
        m.add_int(owed)
        self._chan.transport._send_user_message(m)


def watch_pipe(
    pipe: PushPipe,
    silence_limit: float,
    closing: threading.Event,
    on_end: EndHandler,
    eof_reason: Callable[[], str],
) -> None:
    """The watchdog loop: returns after calling on_end exactly once."""
    while True:
        quiet = time.monotonic() - pipe.last_data
        # Wake when the silence limit would pass (a consumer blocked on stdout is not silence).
        pipe.changed.wait(
            silence_limit / 4 if pipe.busy else max(0.05, min(silence_limit - quiet, silence_limit / 4))
        )
        pipe.changed.clear()
        try:
            pipe.grant_window()
        except (paramiko.SSHException, OSError, EOFError):
            pass  # the connection is going away: its close ends this loop
        if pipe.failure is not None:
            on_end(pipe.failure)
            return
        if pipe.closed:
            pipe.ended = True
            on_end(None if closing.is_set() else eof_reason())
            return
        if not pipe.busy and time.monotonic() - pipe.last_data > silence_limit:
            pipe.ended = True
            on_end(f"no word from the agent for {silence_limit:g} s (host frozen or network down)")
            return
