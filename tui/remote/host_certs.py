"""Host certificates checked as ssh checks them against `@cert-authority` lines (PROTOCOL.certkeys):
a host certificate, signed by a CA key that a `@cert-authority` line names for this host, valid now,
listing the host among its principals, neither it nor its CA `@revoked`.

paramiko takes a certificate as the server's key when asked for one, but checks nothing in it: the
fields are read here and the CA's signature verified with the CA's own key.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import paramiko

HOST_CERT = 2  # the certificate's type field: 1 user, 2 host
# How many length-prefixed public-key fields follow the nonce, per certificate type.
_KEY_FIELDS = {
    "ssh-ed25519-cert-v01@openssh.com": 1,
    "ssh-rsa-cert-v01@openssh.com": 2,
    "ecdsa-sha2-nistp256-cert-v01@openssh.com": 2,
    "ecdsa-sha2-nistp384-cert-v01@openssh.com": 2,
    "ecdsa-sha2-nistp521-cert-v01@openssh.com": 2,
}
CERT_TYPES = {
    "ssh-ed25519": "ssh-ed25519-cert-v01@openssh.com",
    "ecdsa-sha2-nistp256": "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384": "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521": "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "rsa-sha2-512": "rsa-sha2-512-cert-v01@openssh.com",
    "rsa-sha2-256": "rsa-sha2-256-cert-v01@openssh.com",
}


# ssh's default CASignatureAlgorithms (OpenSSH 9): a CA signature made with SHA-1 (`ssh-rsa`) is refused.
CA_SIGNATURE_ALGORITHMS = frozenset(
    {
        "ssh-ed25519",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
        "rsa-sha2-512",
        "rsa-sha2-256",
    }
)


class CertInvalid(Exception):
    """Why a host certificate is not accepted, in a few words."""


@dataclass(frozen=True)
class Cert:
    kind: int
    key_id: str
    principals: list[str]
    valid_after: int
    valid_before: int
    ca_type: str
    ca_blob: bytes
    signed: bytes  # everything the CA's signature covers
    signature: bytes


def parse(blob: bytes) -> Cert:
    msg = paramiko.Message(blob)
    try:
        cert_type = msg.get_text()
        if cert_type not in _KEY_FIELDS:
            raise CertInvalid(f"unsupported certificate type {cert_type}")
        msg.get_binary()  # nonce
        for _ in range(_KEY_FIELDS[cert_type]):
            msg.get_binary()
        msg.get_int64()  # serial
        kind = msg.get_int()
        key_id = msg.get_text()
        names = paramiko.Message(msg.get_binary())
        principals = []
        while names.get_remainder():
            principals.append(names.get_text())
        valid_after, valid_before = msg.get_int64(), msg.get_int64()
        if paramiko.Message(msg.get_binary()).get_remainder():
            raise CertInvalid("it carries critical options, which a host certificate may not")
        msg.get_binary()  # extensions
        msg.get_binary()  # reserved
        ca_blob = msg.get_binary()
        signed = blob[: msg.packet.tell()]
        signature = msg.get_binary()
        ca_type = paramiko.Message(ca_blob).get_text()
    except (paramiko.SSHException, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise CertInvalid(f"malformed certificate ({exc})") from None
    return Cert(kind, key_id, principals, valid_after, valid_before, ca_type, ca_blob, signed, signature)


def ca_key(cert_blob: bytes) -> bytes | None:
    """The CA key that signed a certificate, or None for a malformed one."""
    try:
        return parse(cert_blob).ca_blob
    except CertInvalid:
        return None


def check(
    cert_blob: bytes, principal: str, trusted_cas: set[bytes], revoked: set[bytes], now: float | None = None
) -> None:
    """Raise CertInvalid unless the certificate holds for `principal` (the host name, no port)."""
    cert = parse(cert_blob)
    if cert.kind != HOST_CERT:
        raise CertInvalid("it is not a host certificate")
    if cert.ca_blob in revoked:
        raise CertInvalid("its CA key is @revoked")
    if cert.ca_blob not in trusted_cas:
        raise CertInvalid("no @cert-authority line for this host names its CA")
    when = time.time() if now is None else now
    if not cert.valid_after <= when < cert.valid_before:
        raise CertInvalid("it is not valid now (expired or not yet valid)")
    # no principals: any host; else one of them, compared as written: ssh checks a host certificate
    # with wildcards off (sshconnect.c: sshkey_cert_check_host(…, 0, …)), so `127.0.0.*` names no host
    if cert.principals and principal not in cert.principals:
        raise CertInvalid(f"{principal} is not among its principals ({', '.join(cert.principals)})")
    try:
        algorithm = paramiko.Message(cert.signature).get_text()
    except (paramiko.SSHException, ValueError, IndexError, UnicodeDecodeError):
        raise CertInvalid("its CA signature is malformed") from None
    if algorithm not in CA_SIGNATURE_ALGORITHMS:
        raise CertInvalid(
            f"its CA signed it with {algorithm}, which ssh no longer accepts (CASignatureAlgorithms)"
        )
    try:
        ca = paramiko.PKey.from_type_string(cert.ca_type, cert.ca_blob)
        good = ca.verify_ssh_sig(cert.signed, paramiko.Message(cert.signature))
    except (paramiko.SSHException, ValueError, TypeError) as exc:
        raise CertInvalid(f"its CA signature cannot be checked ({exc})") from None
    if not good:
        raise CertInvalid("its CA signature is not valid")
