"""The home directory ssh works from: the passwd entry's, not $HOME (OpenSSH's tilde_expand and
`%d` use getpwuid, and ssh reads ~/.ssh/config from there). So under `sudo`, or with HOME pointed
elsewhere, gpudeck reads the same ~/.ssh as `ssh` does.

GPUDECK_SSH_HOME overrides it (tests give each case a home of its own; a container whose passwd
entry names no usable home can point it at one).
"""

from __future__ import annotations

import os
import pwd


def ssh_home() -> str:
    override = os.environ.get("GPUDECK_SSH_HOME")
    if override:
        return override
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # no passwd entry (some containers): ssh would refuse; $HOME is the best left
        return os.path.expanduser("~")


def expand_tilde(path: str) -> str:
    """A leading `~` or `~/…` from ssh_home(), `~user/…` from that user's entry; any other `~` stays
    (ssh expands only a leading one). An unknown `~user` is left as written."""
    if not path.startswith("~"):
        return path
    head, sep, rest = path[1:].partition("/")
    if head:
        try:
            home = pwd.getpwnam(head).pw_dir
        except KeyError:
            return path
    else:
        home = ssh_home()
    rest = rest.lstrip("/")
    return os.path.join(home, rest) if sep and rest else home
