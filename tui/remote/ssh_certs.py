"""User certificates, offered as ssh offers them: for a private key, every CertificateFile whose
certified key is that key, and `<identity>-cert.pub` beside it, each before the plain key.

paramiko's `load_certificate` checks only that the key *types* agree, and `PKey.from_path` loads a
`-cert.pub` beside the key by itself, replacing the plain key: here each certificate is matched to
its key by the public key it certifies, and the plain key is still offered after them (a server
may accept the key while refusing an expired certificate, as with ssh).
"""

from __future__ import annotations

import copy
from pathlib import Path

import paramiko
from paramiko.pkey import PublicBlob


def _certifies(cert: PublicBlob, key: paramiko.PKey) -> bool:
    """A certificate blob is `string type, string nonce, <the key's own public fields>, …`."""
    plain = paramiko.Message(key.asbytes())
    plain.get_text()  # the key's type; the rest are its public fields
    fields = plain.get_remainder()
    body = paramiko.Message(cert.key_blob)
    body.get_text()
    body.get_binary()  # the nonce
    return body.get_remainder().startswith(fields)


def _load(path: str) -> PublicBlob | None:
    try:
        blob = PublicBlob.from_file(path)
    except (OSError, ValueError, IndexError, paramiko.SSHException):
        return None  # missing or not a certificate: skipped, as ssh does
    return blob if blob.key_type.endswith("-cert-v01@openssh.com") else None


def offers(identity: str, key: paramiko.PKey, certificate_files: list[str]) -> list[tuple[str, paramiko.PKey]]:
    """(what to call it, key to authenticate with): each matching certificate first, then the plain key."""
    plain = copy.copy(key)
    plain.public_blob = None
    out: list[tuple[str, paramiko.PKey]] = []
    seen: set[bytes] = set()
    for path in [*certificate_files, identity.removesuffix(".pub") + "-cert.pub"]:
        blob = _load(path) if Path(path).is_file() else None
        if blob is None or blob.key_blob in seen:
            continue
        try:
            if not _certifies(blob, plain):
                continue
        except (paramiko.SSHException, IndexError, ValueError, TypeError):
            continue
        seen.add(blob.key_blob)
        with_cert = copy.copy(plain)
        with_cert.public_blob = blob
        out.append((f"{identity} with certificate {path}", with_cert))
    out.append((identity, plain))
    return out
