"""The SSH transport's line reader (#13): long pushes arriving in pieces come out as the same
lines, byte for byte, over a real sshd; reads of a given size and EOF behave as the file object's."""

from __future__ import annotations

import shlex
import sys

from tests.support.sshd import SshHome
from tui.remote.channel_lines import ChannelLines
from tui.remote.ssh_connect import connect

# Lines of many sizes (one far longer than any SSH packet), written in odd pieces with flushes
# between, and a last line without its newline.
PRINTER = (
    "import sys, time\nw = sys.stdout.buffer\n"
    "lines = [b'x' * n + b'\\n' for n in (0, 1, 70, 5000, 300000, 33000, 2)] + [b'tail']\n"
    "data = b'START\\n' + b''.join(lines)\n"
    "for i in range(0, len(data), 7919):\n    w.write(data[i:i + 7919]); w.flush()\n"
)
EXPECTED = [b"x" * n + b"\n" for n in (0, 1, 70, 5000, 300000, 33000, 2)] + [b"tail"]


def test_lines_in_pieces_come_out_whole_and_in_order(ssh_home: SshHome) -> None:
    ssh_home.trust()
    conn = connect("box")
    try:
        chan = conn.transport.open_session(timeout=15)
        chan.settimeout(30)
        chan.exec_command(f"{shlex.quote(sys.executable)} -c {shlex.quote(PRINTER)}")
        reader = ChannelLines(chan)
        while reader.readline() != b"START\n":
            pass  # the fixture's login shell greets first
        got = [reader.readline() for _ in range(3)]
        got.append(reader.read(5001))  # a sized read inside the stream (a journal push's body)
        while line := reader.readline():
            got.append(line)
        assert got == EXPECTED
        assert reader.readline() == b"" and reader.read(10) == b""  # EOF stays EOF
    finally:
        conn.close()

