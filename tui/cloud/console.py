"""Host key fingerprints a provider published: cloud-init prints them to the instance's console
(`-----BEGIN SSH HOST KEY FINGERPRINTS-----` … and the keys themselves under `… KEYS-----`), which
EC2's GetConsoleOutput and ECS's GetInstanceConsoleOutput return. A launched host's key is trusted
without asking only when it matches one of these; otherwise the user is asked."""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

_FINGERPRINT = re.compile(r"\b(SHA256:[A-Za-z0-9+/]{43})\b")
_KEY = re.compile(r"\b((?:ssh|ecdsa)-[a-z0-9-]+)\s+([A-Za-z0-9+/]+={0,2})")


def _blocks(text: str, kind: str) -> list[str]:
    """The lines between -----BEGIN SSH HOST KEY {kind}----- and its END (ec2: prefixes allowed)."""
    out, inside = [], False
    for line in text.splitlines():
        if f"BEGIN SSH HOST KEY {kind}" in line:
            inside = True
        elif f"END SSH HOST KEY {kind}" in line:
            inside = False
        elif inside:
            out.append(line)
    return out


def published_fingerprints(console: str) -> set[str]:
    """Every `SHA256:…` fingerprint the console published (from the fingerprint lines and the keys)."""
    found = {m.group(1) for line in _blocks(console, "FINGERPRINTS") for m in _FINGERPRINT.finditer(line)}
    for line in _blocks(console, "KEYS"):
        m = _KEY.search(line)
        if not m:
            continue
        try:
            blob = base64.b64decode(m.group(2), validate=True)
        except (binascii.Error, ValueError):
            continue
        found.add("SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("="))
    return found
