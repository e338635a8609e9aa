"""A remote command run through a host's warm connection, shaped as the parts of paramiko's Channel
and Transport that gpudeck uses (deploy's probes, the agent's `serve`, its byte streams), so those
callers work unchanged over either.

One unix connection to the master per channel (warm_frames.py). A reader thread demultiplexes the
master's frames: stdout into a bounded buffer (or straight to a push consumer, as PushPipe does
for a direct channel), stderr aside, the exit status into `status_event`.

No paramiko here (a warm command never loads it): a broken or refused warm connection is a
WarmLost, an OSError, which every caller already catches beside paramiko's own errors.
"""

from __future__ import annotations

import contextlib
import io
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

from . import warm_frames as frames
from .transport import Consumer


class WarmLost(ConnectionError):
    """The warm connection is gone, broke, or refused the command."""


BUFFER_MAX = 4 << 20  # stdout held for a slow reader; past it the reader thread waits (back-pressure)


def query(path: Path, request: dict[str, Any], timeout: float = 2.0) -> dict[str, Any] | None:
    """One question to the master on path; None: no master answers there."""
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(str(path))
            frames.send_json(s, b"Q", request)
            answer = frames.recv(s)
    except (OSError, frames.FrameError):
        return None
    if answer is None or answer[0] != b"A":
        return None
    value: dict[str, Any] = json.loads(answer[1])
    return value


class WarmPushPipe:
    """What watch_pipe (push_pipe.py) watches, for a warm channel: no SSH window to grant here."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer
        self.changed = threading.Event()
        self.last_data = time.monotonic()
        self.busy = False
        self.failure: str | None = None
        self.ended = False
        self.closed = False

    def feed(self, data: bytes) -> None:
        if self.ended:
            return
        self.busy = True
        try:
            self._consumer(data)
        except Exception as exc:  # the stream is out of step: end it, saying why
            self.failure, self.ended = str(exc), True
            self.changed.set()
        finally:
            self.busy = False
            self.last_data = time.monotonic()

    def close(self) -> None:
        self.closed = True
        self.changed.set()

    def grant_window(self) -> None:
        pass


class WarmChannel:
    owner: Any  # a WarmTransport (or an OpenSshTransport, openssh_master.py)

    def __init__(
        self,
        owner: WarmTransport,
        window: int | None = None,
        packet: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.owner = owner
        self._window, self._packet = window, packet
        self._buffers()
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(str(owner.path))
        except OSError as exc:
            self.sock.close()
            owner.lost = True
            raise WarmLost(f"the warm connection is gone: {exc}") from None

    def _buffers(self) -> None:
        self._timeout: float | None = None
        self._out = bytearray()
        self._err = bytearray()
        self._cond = threading.Condition()
        self._eof = False
        self.exit_status = -1
        self.status_event = threading.Event()
        self.push: WarmPushPipe | None = None
        self._send_lock = threading.Lock()

    # -- paramiko.Channel's surface ----------------------------------------------------------------

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def get_transport(self) -> Any:
        return self.owner

    def exec_command(self, command: str) -> None:
        self._start(b"E", {"command": command, "window": self._window, "packet": self._packet})

    def join_serve(self, command: str, heartbeat: float) -> None:
        """Become a session of the master's shared `serve --sessions` (warm_serve.py), started with
        command if it runs none: the same bytes as exec_command(plain serve), no new process."""
        self._start(b"V", {"command": command, "heartbeat": heartbeat})

    def _start(self, kind: bytes, request: dict[str, Any]) -> None:
        try:
            frames.send_json(self.sock, kind, request)
            answer = frames.recv(self.sock)
        except (OSError, frames.FrameError) as exc:
            self.owner.lost = True
            raise WarmLost(f"the warm connection broke: {exc}") from None
        if answer is None or answer[0] != b"A":
            self.owner.lost = True
            said = answer[1].decode("utf-8", "replace") if answer else "it hung up"
            raise WarmLost(f"the warm connection refused the command: {said}")
        self.sock.settimeout(None)
        threading.Thread(target=self._read_loop, name="warm-channel", daemon=True).start()

    def _read_loop(self) -> None:
        try:
            while True:
                frame = frames.recv(self.sock)
                if frame is None:
                    self.owner.lost = True  # the master went away without closing the channel
                    break
                if frame[0] == b"Z":
                    break
                kind, payload = frame
                if kind == b"O":
                    self._stdout(payload)
                elif kind == b"e":
                    with self._cond:
                        self._err += payload
                elif kind == b"S":
                    self.exit_status = int(json.loads(payload))
                    self.status_event.set()
        except (OSError, ValueError, frames.FrameError):
            pass
        finally:
            self._ended()

    def _ended(self) -> None:
        with self._cond:
            self._eof = True
            self._cond.notify_all()
        if self.push is not None:
            self.push.close()

    def _stdout(self, data: bytes) -> None:
        if self.push is not None:
            self.push.feed(data)
            return
        with self._cond:
            while len(self._out) > BUFFER_MAX and not self._eof:
                self._cond.wait()
            self._out += data
            self._cond.notify_all()

    def recv(self, size: int) -> bytes:
        with self._cond:
            if not self._cond.wait_for(lambda: self._out or self._eof, self._timeout):
                raise TimeoutError("no data within the channel's timeout")
            data = bytes(self._out[:size])
            del self._out[:size]
            self._cond.notify_all()
            return data

    def recv_ready(self) -> bool:
        return bool(self._out)

    def recv_stderr_ready(self) -> bool:
        with self._cond:
            return bool(self._err)

    def recv_stderr(self, size: int) -> bytes:
        with self._cond:
            data = bytes(self._err[:size])
            del self._err[:size]
            return data

    def exit_status_ready(self) -> bool:
        return self.status_event.is_set()

    def recv_exit_status(self) -> int:
        self.status_event.wait()
        return self.exit_status

    def sendall(self, data: bytes) -> None:
        try:
            with self._send_lock:
                for i in range(0, len(data), frames.CHUNK):
                    frames.send(self.sock, b"I", data[i : i + frames.CHUNK])
        except OSError as exc:
            raise OSError(f"the warm connection broke: {exc}") from None

    def shutdown_write(self) -> None:
        with self._send_lock:
            frames.send(self.sock, b"W")

    def makefile(self, mode: str = "rb", bufsize: int = -1) -> io.BufferedReader:
        return io.BufferedReader(_Raw(self), max(bufsize, io.DEFAULT_BUFFER_SIZE))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


class _Raw(io.RawIOBase):
    def __init__(self, chan: WarmChannel) -> None:
        self.chan = chan

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.chan.recv(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class WarmTransport:
    """paramiko.Transport's surface over a warm connection: every session is a new unix connection."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lost = False  # the master went away under us: the next connect starts a new one

    def open_session(
        self, window_size: int | None = None, max_packet_size: int | None = None, timeout: float | None = None
    ) -> WarmChannel:
        return WarmChannel(self, window_size, max_packet_size, timeout)

    def is_active(self) -> bool:
        return not self.lost

    def open_sftp_client(self) -> Any:
        import paramiko  # only deploy asks, and it has loaded paramiko already

        raise paramiko.SSHException("no SFTP through a warm connection")  # deploy uploads over exec

    def open_channel(self, *args: Any, **kwargs: Any) -> Any:
        import paramiko

        raise paramiko.SSHException("no forwarded channels through a warm connection")

    def memo(self, key: str) -> Any:
        answer = query(self.path, {"op": "memo_get", "key": key})
        return answer.get("value") if answer else None

    def remember(self, key: str, value: Any) -> None:
        query(self.path, {"op": "memo_put", "key": key, "value": value})

    def close(self) -> None:
        pass  # the master stays: that is the point
