"""CRC-32C (Castagnoli), as TFRecord framing masks it. Pure Python: the agent checks only a record's
8-byte length with it (cheap), so a torn or foreign file is caught before a length is trusted; the
client's writer uses a C implementation when one is installed (tui/export/event_file.py)."""

from __future__ import annotations

from typing import List


def _table() -> List[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def mask(crc: int) -> int:
    """TFRecord stores a rotated and offset CRC, so a CRC of CRC-bearing data stays meaningful."""
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    return mask(crc32c(data))
