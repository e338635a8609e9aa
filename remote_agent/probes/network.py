"""Pre-flight network checks for a multi-node job, run by the agents themselves.

The master's agent holds the master port open for a moment (`Listeners.listen`), each node's agent
connects to it (`probe`): that proves the port is free on the master, reachable from the node
through any firewall, and that the address leads to the right machine (the listener's banner
carries a token the prober reports back). The TCP handshake time is the node's round trip to the
master; the local address the kernel picks for that route names the interface NCCL should use.
"""

from __future__ import annotations

import fcntl
import secrets
import socket
import statistics
import struct
import threading
import time
from typing import Any, Dict, List, Optional

MAX_LISTEN_S = 120.0
BANNER = b"gpudeck-preflight "
_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address


class ProbeError(Exception):
    pass


class Listeners:
    """The ports this serve holds open for pre-flight probes, closed by `unlisten` or after `seconds`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: Dict[int, socket.socket] = {}

    def listen(self, port: Any, seconds: Any = 30.0) -> Dict[str, Any]:
        """Port 0: one the kernel picks as free (a master that moved to this host needs a port)."""
        port = 0 if port == 0 and not isinstance(port, bool) else _port(port)
        if (
            not isinstance(seconds, (int, float))
            or isinstance(seconds, bool)
            or not 0 < seconds <= MAX_LISTEN_S
        ):
            raise ProbeError("seconds: expected a number in (0, %d], got %r" % (MAX_LISTEN_S, seconds))
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # torchrun's store binds every address: so do we, to learn whether it could.
        # SO_REUSEADDR as torchrun's store has it: a stopped job's TIME_WAIT sockets do not count
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("0.0.0.0", port))
            sock.listen(64)
            port = sock.getsockname()[1]
        except OSError as exc:
            sock.close()
            raise ProbeError("port %d is not free on this host (%s)" % (port, exc.strerror or exc)) from None
        token = secrets.token_hex(8)
        with self._lock:
            old = self._open.pop(port, None)
            self._open[port] = sock
        if old is not None:
            _close_now(old)
        threading.Thread(
            target=self._accept,
            args=(sock, port, token, time.monotonic() + float(seconds)),
            name="preflight-%d" % port,
            daemon=True,
        ).start()
        return {"port": port, "token": token, "seconds": float(seconds)}

    def unlisten(self, port: Any) -> Dict[str, Any]:
        with self._lock:
            sock = self._open.pop(_port(port), None)
        if sock is not None:
            _close_now(sock)
        return {"was_listening": sock is not None}

    def _accept(self, sock: socket.socket, port: int, token: str, deadline: float) -> None:
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                sock.settimeout(min(left, 0.5))
                try:
                    conn, _ = sock.accept()
                except socket.timeout:  # noqa: UP041 - TimeoutError only on 3.10+, the agent runs on 3.8
                    continue
                # the prober reads the banner and closes first: no TIME_WAIT on the master's port
                with conn:
                    conn.settimeout(2.0)
                    try:
                        conn.sendall(BANNER + token.encode() + b"\n")
                        conn.recv(1)
                    except OSError:
                        pass
        except OSError:
            return  # closed by unlisten
        finally:
            with self._lock:
                if self._open.get(port) is sock:
                    del self._open[port]
            sock.close()

    def close_all(self) -> None:
        with self._lock:
            socks, self._open = list(self._open.values()), {}
        for sock in socks:
            _close_now(sock)


def _close_now(sock: socket.socket) -> None:
    """Stop listening before returning: a plain close() leaves the port open while another thread
    waits in accept(); shutdown() wakes it (Linux), so the job launched next can bind the port."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


def probe(addr: Any, port: Any, count: Any = 3, timeout: Any = 3.0, banner: Any = True) -> Dict[str, Any]:
    """Connect to addr:port `count` times: reachable or why not, the handshake's median time, the
    banner's token (a gpudeck listener's) and the local interface that carries the route.
    `banner=False`: the port is held by something that sends none (a running job's rendezvous
    store, probed before an elastic join or a resize): waiting for one would cost 1 s a connect."""
    if not isinstance(addr, str) or not addr or len(addr) > 255:
        raise ProbeError("addr: expected a host name or address, got %r" % (addr,))
    port = _port(port)
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 20:
        raise ProbeError("count: expected 1..20, got %r" % (count,))
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not 0 < timeout <= 30:
        raise ProbeError("timeout: expected seconds in (0, 30], got %r" % (timeout,))
    if not isinstance(banner, bool):
        raise ProbeError("banner: expected true or false, got %r" % (banner,))
    out: Dict[str, Any] = {
        "reachable": False,
        "error": None,
        "rtt_ms": None,
        "token": None,
        "local_addr": None,
        "iface": None,
    }
    try:
        infos = socket.getaddrinfo(addr, port, socket.AF_INET, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        out["error"] = "%s does not resolve (%s)" % (addr, exc.strerror or exc)
        return out
    target = infos[0][4]
    times: List[float] = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(float(timeout))
        try:
            start = time.perf_counter()
            sock.connect(target)
            times.append((time.perf_counter() - start) * 1000.0)
            out["local_addr"] = sock.getsockname()[0]
            out["token"] = _read_token(sock) if banner else None
        except socket.timeout:  # noqa: UP041 - TimeoutError only on 3.10+, the agent runs on 3.8
            out["error"] = "no answer from %s:%d within %g s (a firewall dropping it?)" % (
                addr,
                port,
                timeout,
            )
            out["local_addr"] = route_addr(target)
            return out
        except OSError as exc:
            out["error"] = "%s:%d: %s" % (addr, port, exc.strerror or exc)
            out["local_addr"] = route_addr(target)
            return out
        finally:
            sock.close()
    out.update(reachable=True, rtt_ms=round(statistics.median(times), 3), iface=iface_of(out["local_addr"]))
    return out


def route_addr(target: Any) -> Optional[str]:
    """This host's address on the route to `target`, whether or not anything answers there: a UDP
    connect only looks the route up (no packet is sent). It is the address the peers reach this
    host at, on the network they share with `target`."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(target)
            return str(s.getsockname()[0])
    except OSError:
        return None


def _read_token(sock: socket.socket) -> Optional[str]:
    """The listener's token, or None when something else answers (it may send nothing)."""
    sock.settimeout(1.0)
    data = b""
    try:
        while not data.endswith(b"\n") and len(data) < 64:
            chunk = sock.recv(64 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    if data.startswith(BANNER) and data.endswith(b"\n"):
        return data[len(BANNER) : -1].decode("ascii", "replace")
    return None


def iface_of(local_addr: Optional[str]) -> Optional[str]:
    """The interface holding this IPv4 address (Linux ioctl; None elsewhere or when not found)."""
    if not local_addr:
        return None
    try:
        names = [name for _, name in socket.if_nameindex()]
    except OSError:
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for name in names:
            try:
                raw = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, struct.pack("256s", name[:15].encode()))
            except OSError:
                continue
            if socket.inet_ntoa(raw[20:24]) == local_addr:
                return name
    return None


def _port(port: Any) -> int:
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        raise ProbeError("port: expected 1..65535, got %r" % (port,))
    return port
