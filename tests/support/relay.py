"""A ProxyCommand for tests (no netcat here): relays stdin/stdout to HOST PORT, marks that it ran."""

from __future__ import annotations

import os
import selectors
import socket
import sys


def main() -> None:
    host, port, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(marker, "a") as f:
        f.write(f"{host}:{port}\n")
    sock = socket.create_connection((host, port))
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin.fileno(), selectors.EVENT_READ, "in")
    sel.register(sock, selectors.EVENT_READ, "sock")
    while True:
        for key, _ in sel.select():
            if key.data == "in":
                data = os.read(sys.stdin.fileno(), 65536)
                if not data:
                    return
                sock.sendall(data)
            else:
                data = sock.recv(65536)
                if not data:
                    return
                os.write(sys.stdout.fileno(), data)


if __name__ == "__main__":
    main()
