"""TFRecord framing, read from a byte offset: u64 length, masked CRC-32C of those 8 bytes, the
data, masked CRC-32C of the data. A partly written last record is left for the next read (the
offset stays before it); a length whose CRC is wrong means the file is not (or no longer) a
record file, and it is read no further. The data's own CRC is not checked: pure-Python CRC over
every byte would cost more than the rest of the reading, and a torn record is caught by its
length's CRC and by the protobuf decoder."""

from __future__ import annotations

import struct
from typing import List, Tuple

from .crc import masked_crc32c

_HEADER = struct.Struct("<QI")
MAX_RECORD = 64 << 20  # one event larger than this is no scalar: the file is left alone
CHUNK = 1 << 20


class Corrupt(ValueError):
    pass


def read_records(path: str, offset: int, max_bytes: int = 8 * CHUNK) -> Tuple[List[bytes], int]:
    """The complete records from `offset` on (at most about `max_bytes` of them) and the offset
    after the last one. Raises Corrupt for a bad length, OSError when the file cannot be read."""
    records: List[bytes] = []
    with open(path, "rb") as f:
        f.seek(offset)
        buf = f.read(max_bytes)
        at = 0
        while True:
            if len(buf) - at < 12:
                break
            length, length_crc = _HEADER.unpack_from(buf, at)
            if masked_crc32c(buf[at : at + 8]) != length_crc or length > MAX_RECORD:
                raise Corrupt("bad record length at byte %d" % (offset + at))
            end = at + 12 + length + 4
            if end > len(buf):
                if at > 0 or len(buf) < max_bytes:
                    break  # partly written (or past this read's window): read again next time
                more = f.read(end - len(buf))  # one record bigger than the window
                buf += more
                if end > len(buf):
                    break
            records.append(buf[at + 12 : at + 12 + length])
            at = end
    return records, offset + at
