"""`gpudeck logs --json`: the output's lines as JSON lines, `{"node", "line", "text", "t"}`, for
scripts that want lines rather than bytes. A file-like sink: `logs` writes its bytes here as it
would to stdout (with -f, from the client's reading thread), and a line is printed once its newline
came (the last one, unended, at `close`). `line` counts from 1 as an editor does; `t` is null, as
output.log keeps no time per line (`metrics --json` has the host's time of each point)."""

from __future__ import annotations

import json
from typing import BinaryIO


class JsonLines:
    def __init__(self, out: BinaryIO, node: str) -> None:
        self.out = out
        self.node = node
        self.line = 0
        self._partial = b""

    def write(self, data: bytes) -> int:
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        if lines:
            self.out.write(b"".join(self._encode(raw) for raw in lines))
            self.out.flush()
        return len(data)

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        """The last line, when the output did not end with a newline."""
        if self._partial:
            self.out.write(self._encode(self._partial))
            self._partial = b""
        self.out.flush()

    def _encode(self, raw: bytes) -> bytes:
        self.line += 1
        text = raw[:-1] if raw.endswith(b"\r") else raw
        obj = {"node": self.node, "line": self.line, "text": text.decode("utf-8", "replace"), "t": None}
        return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8")
