"""The user's TOML files: one reader (tomllib, or tomli on 3.10) and one atomic, private writer."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOMLDecodeError = tomllib.TOMLDecodeError
TOO_DEEP = "arrays or tables nested too deeply"


def parse_toml(text: str) -> dict[str, Any]:
    """The document as plain dicts; TOMLDecodeError names the line and column."""
    try:
        doc: dict[str, Any] = tomllib.loads(text)  # tomli, untyped here, on 3.10
        return doc
    except RecursionError:  # tomllib parses nested arrays and tables by recursion
        raise TOMLDecodeError(TOO_DEEP) from None


class BadToml(ValueError):
    """Bytes that are not UTF-8 TOML: `line` (None when unknown) and the message, without the line."""

    def __init__(self, line: int | None, message: str) -> None:
        super().__init__(message)
        self.line = line


def parse_bytes(data: bytes) -> tuple[dict[str, Any], str]:
    """The document as plain dicts, and its text; BadToml for bytes that are not UTF-8 or not TOML."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BadToml(line, f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})") from None
    try:
        return tomllib.loads(text), text
    except RecursionError:
        raise BadToml(None, f"not valid TOML: {TOO_DEEP}") from None
    except TOMLDecodeError as exc:
        found = re.search(r"\s*\(at line (\d+), column \d+\)$", str(exc))
        if found is None:
            raise BadToml(None, f"not valid TOML: {exc}") from None
        raise BadToml(int(found.group(1)), f"not valid TOML: {str(exc)[: found.start()]}") from None


def line_of(lines: list[str], table: str, key: str, header: str | None = None) -> int | None:
    """The line `key = …` is on inside `[table]` (or the `[header]` line itself; table "" is the top)."""
    current = ""
    key_re = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        head = re.match(r"^\[\[?\s*([^\]]+?)\s*\]", line)
        if head:
            current = head.group(1).replace(" ", "")
            if header and current == header:
                return number
            continue
        if current == table and key_re.match(raw):
            return number
    return None


def read_toml(path: Path) -> dict[str, Any]:
    """OSError when unreadable, TOMLDecodeError when malformed."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TOMLDecodeError(f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})") from None
    return parse_toml(text)


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the whole new one; a failed write leaves no temp file behind."""
    import tempfile  # here: most commands only read (~2 ms of their start)

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".toml", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def where(path: Path, line: int | None) -> str:
    """`file:line` for an error line, or the file alone when the line is not known."""
    return f"{path}:{line}" if line else str(path)
