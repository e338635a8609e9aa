"""The public half of an identity file, found where ssh finds it (authfile.c sshkey_load_public): the
file itself when it is a public key, else `FILE.pub`, else the public key an OpenSSH-format private
key carries in the clear ahead of its (possibly encrypted) secret part.

The last is what lets an encrypted key held by ssh-agent be matched with no `.pub` on disk. Only
public bytes are read here: nothing is decrypted and no passphrase is asked.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

MAX_KEY_FILE = 1 << 20  # a key file is a few KB; a bigger one is not read whole
_MAGIC = b"openssh-key-v1\0"
_ARMOUR = re.compile(r"-----BEGIN OPENSSH PRIVATE KEY-----(.*?)-----END OPENSSH PRIVATE KEY-----", re.DOTALL)


def _text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_KEY_FILE).decode("utf-8", "replace")
    except OSError:
        return None


def _from_public_file(path: str) -> bytes | None:
    """`type base64 [comment]` on the file's first line that is not blank or a comment."""
    text = _text(path)
    for line in (text or "").split("\n"):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        try:
            blob = base64.b64decode(fields[1], validate=True) if len(fields) > 1 else b""
        except (binascii.Error, ValueError):
            return None
        return blob if _key_type(blob) == fields[0] else None
    return None


def _string(data: bytes, at: int) -> tuple[bytes, int]:
    (size,) = struct.unpack_from(">I", data, at)
    end = at + 4 + size
    if end > len(data):
        raise ValueError("truncated")
    return data[at + 4 : end], end


def _key_type(blob: bytes) -> str | None:
    try:
        return _string(blob, 0)[0].decode("ascii")
    except (struct.error, ValueError, UnicodeDecodeError):
        return None


def _from_private_file(path: str) -> bytes | None:
    """openssh-key-v1: magic, cipher, kdf, kdf options, key count, then the first public key."""
    found = _ARMOUR.search(_text(path) or "")
    if found is None:
        return None
    try:
        data = base64.b64decode("".join(found.group(1).split()), validate=True)
        if not data.startswith(_MAGIC):
            return None
        at = len(_MAGIC)
        for _ in range(3):  # cipher name, kdf name, kdf options
            _, at = _string(data, at)
        (count,) = struct.unpack_from(">I", data, at)
        blob, _ = _string(data, at + 4)
    except (binascii.Error, struct.error, ValueError):
        return None
    return blob if count >= 1 and _key_type(blob) else None


def public_blob(path: str) -> bytes | None:
    """The identity's public key blob, or None when none of ssh's three places holds one."""
    return _from_public_file(path) or _from_public_file(path + ".pub") or _from_private_file(path)
