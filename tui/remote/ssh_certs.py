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


def certifies(cert_blob: bytes, key_blob: bytes) -> bool:
    """Is cert_blob a certificate of the plain key key_blob? A certificate blob is `string type,
    string nonce, <the key's own public fields>, …`."""
    try:
        plain = paramiko.Message(key_blob)
        plain.get_text()  # the key's type; the rest are its public fields
        fields = plain.get_remainder()
        body = paramiko.Message(cert_blob)
        if not body.get_text().endswith("-cert-v01@openssh.com"):
            return False
        body.get_binary()  # the nonce
        return bool(fields) and body.get_remainder().startswith(fields)
    except (paramiko.SSHException, IndexError, ValueError, TypeError, UnicodeDecodeError):
        return False


def _load(path: str) -> PublicBlob | None:
    try:
        blob = PublicBlob.from_file(path)
    except (OSError, ValueError, IndexError, paramiko.SSHException):
        return None  # missing or not a certificate: skipped, as ssh does
    return blob if blob.key_type.endswith("-cert-v01@openssh.com") else None


def _clone(key: paramiko.PKey) -> paramiko.PKey:
    # copy.copy recurses forever on an AgentKey (its __getattr__ asks for attributes not set yet)
    if isinstance(key, paramiko.AgentKey):
        return paramiko.AgentKey(key.agent, key.blob, getattr(key, "comment", ""))
    return copy.copy(key)


def beside(identity: str) -> str:
    """The certificate ssh looks for next to an identity file: `KEY-cert.pub` (for KEY or KEY.pub)."""
    return identity.removesuffix(".pub") + "-cert.pub"


def offers(name: str, key: paramiko.PKey, cert_paths: list[str]) -> list[tuple[str, paramiko.PKey]]:
    """(what to call it, key to authenticate with): the key with each certificate among cert_paths
    that certifies it, then the plain key. Works for an ssh-agent's key too: the agent signs with
    the plain key, and the server checks that signature against the certificate's key."""
    plain = _clone(key)
    plain.public_blob = None
    out: list[tuple[str, paramiko.PKey]] = []
    seen: set[bytes] = set()
    for path in cert_paths:
        blob = _load(path) if Path(path).is_file() else None
        if blob is None or blob.key_blob in seen or not certifies(blob.key_blob, plain.asbytes()):
            continue
        seen.add(blob.key_blob)
        with_cert = _clone(plain)
        with_cert.public_blob = blob
        out.append((f"{name} with certificate {path}", with_cert))
    out.append((name, plain))
    return out
