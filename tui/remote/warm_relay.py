"""One channel of a warm master (warm_master.py) relayed to one unix connection (warm_frames.py):
the client's stdin frames into the channel; its stdout and stderr out as they come, then the exit
status and `Z`. Closing either side closes the other."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any

import paramiko

from . import warm_frames as frames


class Relay:
    """One channel ↔ one unix connection: stdout and stderr out as they come, then the exit status."""

    def __init__(self, client: socket.socket, chan: paramiko.Channel) -> None:
        self.client = client
        self.chan = chan
        self.send_lock = threading.Lock()

    def run(self) -> None:
        out = threading.Thread(target=self._outputs, daemon=True)
        out.start()
        try:
            while True:
                frame = frames.recv(self.client)
                if frame is None:
                    break
                kind, payload = frame
                if kind == b"I":
                    self.chan.sendall(payload)
                elif kind == b"W":
                    self.chan.shutdown_write()
        except (OSError, EOFError, paramiko.SSHException, frames.FrameError):
            pass
        finally:
            self.chan.close()  # the client went away (or the channel broke): the pumps see EOF
            out.join()

    def _send(self, kind: bytes, payload: bytes) -> None:
        with self.send_lock:
            frames.send(self.client, kind, payload)

    def _pump(self, read: Any, kind: bytes) -> None:
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            while True:
                data = read(frames.CHUNK)
                if not data:
                    return
                self._send(kind, data)

    def _outputs(self) -> None:
        err = threading.Thread(target=self._pump, args=(self.chan.recv_stderr, b"e"), daemon=True)
        err.start()
        self._pump(self.chan.recv, b"O")
        err.join()
        with contextlib.suppress(OSError):
            status = self.chan.recv_exit_status() if self.chan.status_event.wait(5) else -1
            self._send(b"S", json.dumps(status).encode())
            self._send(b"Z", b"")
