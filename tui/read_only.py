"""What `--read-only` refuses: every verb that writes anything (a job, a file, a host key, a price,
a cloud instance, a rules decision). One table, read by the CLI's check, its `--help` and a test
that holds the README to it."""

from __future__ import annotations

# verb → its sub-verbs that write, or None when the verb writes whatever its sub-verb.
WRITING: dict[str, tuple[str, ...] | None] = {
    "run": None,
    "watch": None,
    "stop": None,
    "kill": None,
    "restart": None,
    "rm": None,
    "autostop": None,
    "scale": None,
    "sync": None,  # the hosts' code stores
    "gc": None,
    "hosts": ("add", "rm", "set", "trust"),  # hosts.toml, known_hosts, prices pushed to running jobs
    "cloud": ("stop", "start", "terminate", "launch", "enforce"),
    "policy": ("run",),
}


def refuses(verb: str, sub_verb: str | None) -> bool:
    """True when --read-only must refuse `gpudeck VERB [SUB_VERB]`."""
    if verb not in WRITING:
        return False
    writes = WRITING[verb]
    return writes is None or sub_verb in writes


def refused_list() -> str:
    """The refused verbs in words, as --help and the README list them."""
    return ", ".join(verb if subs is None else f"{verb} {'/'.join(subs)}" for verb, subs in WRITING.items())
