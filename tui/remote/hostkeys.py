"""Host key checking like OpenSSH's: ~/.ssh/known_hosts and gpudeck's own known_hosts, read together.

An unknown key is refused until the user accepts its SHA256 fingerprint (only `hosts add` and
`hosts trust` may ask); a changed key is refused outright, and trusting does not override it: the
old line has to be removed first, exactly as with `ssh`. Keys are only ever appended to gpudeck's
own file. Never AutoAddPolicy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import paramiko

from .. import paths
from .hostkey_errors import HostKeyChanged, HostKeyUnknown


def user_known_hosts() -> Path:
    return Path("~/.ssh/known_hosts").expanduser()


def own_known_hosts() -> Path:
    return paths.config_dir() / "known_hosts"


@dataclass
class KnownHosts:
    """Both files, loaded fresh: another gpudeck (or ssh) may have written them since."""

    files: tuple[Path, ...]

    @classmethod
    def default(cls) -> KnownHosts:
        return cls((user_known_hosts(), own_known_hosts()))

    def _load(self) -> list[tuple[Path, paramiko.HostKeys]]:
        loaded = []
        for path in self.files:
            keys = paramiko.HostKeys()
            try:
                keys.load(str(path))
            except (OSError, paramiko.SSHException):
                continue  # a missing file knows nothing; an unreadable one is not our business to fix
            loaded.append((path, keys))
        return loaded

    def known_types(self, name: str) -> list[str]:
        """Key types stored for a name, so the server is asked for one of those first (like ssh)."""
        types: list[str] = []
        for _, keys in self._load():
            for kind in (keys.lookup(name) or {}):
                if kind not in types:
                    types.append(kind)
        return types

    def check(self, name: str, key: paramiko.PKey) -> None:
        """Return if the key is known for name; raise HostKeyUnknown or HostKeyChanged."""
        changed: HostKeyChanged | None = None
        for path, keys in self._load():
            entry = keys.lookup(name) or {}
            known = entry.get(key.get_name())
            if known is None:
                continue
            if known.asbytes() == key.asbytes():
                return  # one matching line is enough, as in OpenSSH
            changed = changed or HostKeyChanged(name, key, known, str(path))
        if changed is not None:
            raise changed
        raise HostKeyUnknown(name, key)

    def add(self, name: str, key: paramiko.PKey) -> Path:
        """Append to gpudeck's own file (0600): never rewrite the user's ~/.ssh/known_hosts."""
        path = self.files[-1]
        paths.ensure_private(path.parent)
        line = f"{name} {key.get_name()} {key.get_base64()}\n"
        with open(path, "a", encoding="utf-8") as f:
            f.write(line)
        path.chmod(0o600)
        return path


# Called for a key that check() found unknown: True to trust it (and it is saved), False to refuse.
Confirm = Callable[[str, paramiko.PKey], bool]


def verify(known: KnownHosts, name: str, key: paramiko.PKey, confirm: Confirm | None) -> None:
    """check(), asking `confirm` about an unknown key when one is given; a changed key always raises."""
    try:
        known.check(name, key)
    except HostKeyUnknown:
        if confirm is None or not confirm(name, key):
            raise
        known.add(name, key)
