"""The host-key refusals and fingerprints, apart from paramiko: the TUI tells a changed key from a
dead host without loading paramiko for a local-only fleet."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# Asked about an unknown key: (host name, the key) -> trust it?
Confirm = Callable[[str, Any], bool]

__all__ = ["Confirm", "HostKeyChanged", "HostKeyError", "HostKeyRevoked", "HostKeyUnknown", "fingerprint"]


def fingerprint(key: Any) -> str:
    """`SHA256:…` as `ssh-keygen -l` prints it."""
    import base64  # here: only a refused key is said, and every command imports this module
    import hashlib

    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


class HostKeyError(Exception):
    """A server's key is not (or no longer) the one we know."""


class HostKeyUnknown(HostKeyError):
    # strict: the host's StrictHostKeyChecking is yes, so gpudeck never adds its key (the user does)
    def __init__(self, name: str, key: Any, note: str = "", strict: bool = False) -> None:
        self.name, self.key, self.strict, self.note = (
            name,
            key,
            strict,
            note,
        )  # note: why a certificate did not do
        super().__init__(f"host key for {name} is unknown ({key.get_name()} {fingerprint(key)}){note}")

    def __str__(self) -> str:  # strict is set once the host's config is known, after the check
        said = super().__str__()
        return f"{said}; StrictHostKeyChecking yes: add it to known_hosts yourself" if self.strict else said


class HostKeyChanged(HostKeyError):
    """The server's key matches no known line while some line (of any key type) names the host."""

    def __init__(self, name: str, key: Any, known: Any, where: str) -> None:
        self.name, self.key, self.known, self.where = name, key, known, where
        super().__init__(
            f"HOST KEY FOR {name} HAS CHANGED: someone could be eavesdropping on you (a man-in-the-middle "
            f"attack), or the host was reinstalled. It now offers {key.get_name()} {fingerprint(key)}; "
            f"{where} holds {known.get_name()} {fingerprint(known)}. "
            f"Remove the old key there (ssh-keygen -R) if the change is expected."
        )


class HostKeyRevoked(HostKeyError):
    """The server offers a key marked `@revoked`, or a certificate whose CA key is: refused whatever else
    is known, as by ssh."""

    def __init__(self, name: str, key: Any, where: str, why: str = "") -> None:
        self.name, self.key, self.where = name, key, where
        said = f": {why}" if why else ""
        super().__init__(
            f"host key for {name} ({key.get_name()} {fingerprint(key)}) is REVOKED{said} ({where}): refused"
        )


# Where notices about known_hosts go (a skipped @cert-authority line): the CLI prints them on
# stderr; the TUI leaves them here, since stderr is its screen.
notices: list[str] = []
notice_sink: Callable[[str], None] | None = None


def notice(text: str) -> None:
    notices.append(text)
    if notice_sink is not None:
        notice_sink(text)
