"""`gpudeck hosts disconnect [NAME]`: end a host's warm connection (every host's without NAME), as
`ssh -O exit` ends an OpenSSH master. The next command to the host connects afresh."""

from __future__ import annotations

import argparse
import json

from ..errors import EXIT_USAGE, GpudeckError
from ..hosts_file import LOCAL
from ..printable import printable
from ..session import Session, host_entries


def disconnect(args: argparse.Namespace, session: Session) -> int:
    from ..remote import warm  # paramiko's import only for this verb

    entries = host_entries()
    if args.name is not None and args.name not in entries:
        raise GpudeckError(f"unknown host {args.name!r} (see `gpudeck hosts`)", EXIT_USAGE)
    names = [args.name] if args.name is not None else [n for n in entries if n != LOCAL]
    ended = [{"host": name, "was_warm": warm.disconnect(entries[name])} for name in names if name != LOCAL]
    if args.json:
        print(json.dumps(ended, indent=2))
        return 0
    for row in ended:
        said = "warm connection ended" if row["was_warm"] else "no warm connection"
        print(printable(f"{row['host']}: {said}"))
    return 0
