"""`gpudeck hosts [--json]`, `hosts add|rm|set|trust`: the user's hosts, their price settings, and trusting their keys.

Only `hosts add` and `hosts trust` ever ask about a host key (or take `--yes`); every other command
refuses an unknown key with one line naming `gpudeck hosts trust NAME`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # paramiko loads in ~140 ms: only the verbs that connect pay for it
    import paramiko

    from ..cost.settings import HostPrice

from ..errors import EXIT_HOST, EXIT_USAGE, GpudeckError
from ..format import table
from ..hosts_file import (
    SLURM_VALUE_RE,
    HostEntry,
    HostsFileError,
    add_host,
    check_name,
    hosts_path,
    load_hosts,
    remove_host,
    set_host_fields,
)
from ..printable import printable, warn
from ..remote.hostkey_errors import HostKeyError, fingerprint
from ..remote.ssh_config import SshConfigError, split_target
from ..remote.transport import TransportError
from ..session import LOCAL, Session, host_key_error, ssh_transport_for


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hosts",
        help="list hosts (reachable or why not, agent, GPUs, clock); add, rm, set, trust",
        description="List hosts (reachable or why not, agent, GPUs, clock), or change them: "
        "add, rm, set (price settings), trust (a host key).",
    )
    p.add_argument(
        "--json", action="store_true", help="a JSON list: one object per host, every field in each"
    )
    verbs = p.add_subparsers(dest="hosts_verb", metavar="ACTION")
    a = verbs.add_parser("add", help="add a host: TARGET is [user@]host[:port] or a ~/.ssh/config alias")
    a.add_argument("name", help="the host's name in gpudeck (1-64 of A-Z a-z 0-9 . _ -)")
    a.add_argument("target", help="[user@]host[:port], or an alias from ~/.ssh/config")
    a.add_argument(
        "--identity-file", metavar="F", help="the private key to log in with (default: as ssh chooses)"
    )
    a.add_argument("--python", metavar="PATH", help="interpreter on the host (default: python3 on its PATH)")
    a.add_argument(
        "--agent-dir",
        "--dir",
        metavar="DIR",
        default="~/.gpudeck",
        help="the agent's directory on the host (default ~/.gpudeck; on a Slurm host: on the shared file system)",
    )
    a.add_argument(
        "--slurm",
        action="store_true",
        help="TARGET is a Slurm login node: jobs are submitted with sbatch (README: Slurm clusters)",
    )
    for option in ("--partition", "--account", "--qos"):
        a.add_argument(
            option, metavar=option[2:].upper(), help=f"with --slurm: sbatch {option} for every job"
        )
    a.add_argument(
        "--setup", action="append", default=[], metavar="LINE", help="shell line run before every job"
    )
    a.add_argument("--yes", action="store_true", help="trust the host key without asking (scripts)")
    a.add_argument("--no-connect", action="store_true", help="only write hosts.toml")
    c = verbs.add_parser(
        "check", help="what a host can run: GPUs and driver, container runtimes and GPU passing"
    )
    c.add_argument("name", help="the host's name in gpudeck")
    # also after the action (`hosts check NAME --json`); SUPPRESS keeps `hosts --json check NAME` working
    c.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="one JSON object")
    sh = verbs.add_parser(
        "show", help="a Slurm host at a glance: partitions, GPUs idle/allocated/down, your queue"
    )
    sh.add_argument("name", help="the Slurm host")
    sh.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="one JSON object")
    r = verbs.add_parser("rm", help="remove a host from hosts.toml")
    r.add_argument("name", help="the host to remove (its jobs' files stay on it)")
    st = verbs.add_parser(
        "set", help="set a host's price settings: price_per_hour=2.5 market=spot … (KEY= removes)"
    )
    st.add_argument("name", help="the host (local too)")
    st.add_argument(
        "settings",
        nargs="+",
        metavar="KEY=VALUE",
        help="price_per_hour (a Slurm host: price_per_gpu_hour or price_per_node_hour), currency, market, provider, "
        "instance_type, region, instance_id, idle_stop, instance_idle_stop; KEY= removes one",
    )
    rv = verbs.add_parser(
        "resolve",
        help="print how TARGET resolves, in `ssh -G` format",
        description="Print how gpudeck resolves TARGET (a host's name or an SSH target) from "
        "~/.ssh/config and /etc/ssh/ssh_config: one `keyword value` per line, as `ssh -G`.",
    )
    rv.add_argument("target", help="a host's name, or an SSH target as for `hosts add`")
    rv.add_argument(
        "-F", dest="config_file", metavar="FILE", help="read this config file alone (as `ssh -F`)"
    )
    d = verbs.add_parser(
        "disconnect",
        help="end a host's warm connection (every host's without NAME): the next command connects afresh",
    )
    d.add_argument("name", nargs="?", help="the host (default: all)")
    d.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="a JSON list, one object per host"
    )
    t = verbs.add_parser("trust", help="check a host's key fingerprint and trust it")
    t.add_argument("name", help="the host whose key (and its jump hosts' keys) to check")
    t.add_argument("--yes", action="store_true", help="trust without asking (scripts)")


def ask(name: str, key: paramiko.PKey) -> bool:
    """The CLI's prompt for an unknown key (only on a TTY)."""
    sys.stderr.write(
        f"The authenticity of host '{printable(name)}' can't be established.\n"
        f"{key.get_name()} key fingerprint is {fingerprint(key)}.\nTrust this key and continue (yes/no)? "
    )
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def trust(name: str, yes: bool, entry: HostEntry | None = None) -> list[str]:
    """Connect to `name` (and its jump hosts), accepting unknown keys by --yes or by a prompt.
    `entry`: a host not (yet) in hosts.toml, as `hosts add` checks it before storing it.

    Returns what was trusted; raises GpudeckError for a refused or changed key, or an unreachable host.
    """
    if name == LOCAL:
        return []
    trusted: list[str] = []

    def confirm(known_name: str, key: paramiko.PKey) -> bool:
        ok = yes or (sys.stdin.isatty() and ask(known_name, key))
        if ok:
            trusted.append(f"{known_name} {key.get_name()} {fingerprint(key)}")
        return ok

    asking = confirm if (yes or sys.stdin.isatty()) else None
    if entry is None:
        transport = ssh_transport_for(name, confirm=asking)
    else:
        from ..remote.ssh_transport import SshTransport  # paramiko only for the verbs that connect
        from ..session import settings

        transport = SshTransport(entry, settings().ssh, asking)
    try:
        transport.connect()
    except HostKeyError as exc:
        raise host_key_error(
            name, exc, None if entry is None else "the same `gpudeck hosts add` with --yes"
        ) from None
    except TransportError as exc:
        raise GpudeckError(f"host {name} unreachable: {exc}", EXIT_HOST) from None
    finally:
        transport.close()
    return trusted


# `hosts --json`: every entry has every field; what an unreachable host cannot tell is null.
PROBE_FIELDS = (
    "name",
    "reachable",
    "error",
    "hostname",
    "agent_version",
    "os",
    "python",
    "cpu_count",
    "ram_total_mib",
    "gpus",
    "gpu_reason",
    "driver_version",
    "cuda_version",
    "warning",
    "clock_offset_s",
)


def probe(session: Session, host: str) -> dict[str, Any]:
    try:
        session.client(host)  # connect (and deploy) first: the clock offset must time the request alone
        hello = session.request(host, "hello", timeout=30.0)
        sent = time.time()
        now = session.request(host, "ping", timeout=30.0)["time"]
    except GpudeckError as exc:  # every field still there, null: one shape for every entry
        return {
            **dict.fromkeys(PROBE_FIELDS),
            "name": host,
            "reachable": False,
            "error": str(exc),
            "gpus": [],
        }
    received = time.time()
    gpu = hello.get("gpu") or {}
    logind = hello.get("logind") or {}
    return {
        "name": host,
        "reachable": True,
        "error": None,
        "hostname": hello.get("hostname"),
        "agent_version": hello.get("agent_version"),
        "os": hello.get("os"),
        "python": hello.get("python"),
        "cpu_count": hello.get("cpu_count"),
        "ram_total_mib": hello.get("ram_total_mib"),
        "gpus": gpu.get("gpus") or [],
        "gpu_reason": gpu.get("reason"),
        "driver_version": gpu.get("driver_version"),
        "cuda_version": gpu.get("cuda_version"),
        "warning": logind.get("advice"),
        # The host's clock against ours, taking the request's midpoint as the moment it answered.
        "clock_offset_s": round(now - (sent + received) / 2, 3),
    }


def run(args: argparse.Namespace, session: Session) -> int:
    verb = getattr(args, "hosts_verb", None)
    try:
        if verb == "add":
            return add(args, session)
        if verb == "set":
            return set_settings(args.name, args.settings, session)
        if verb == "rm":
            remove_host(args.name)
            print(f"removed {args.name}")
            return 0
    except HostsFileError as exc:
        raise GpudeckError(str(exc), exc.code) from None
    if verb == "show":
        from .hosts_slurm import show

        return show(args, session)
    if verb == "check":
        from .hosts_check import check

        return check(args, session)
    if verb == "disconnect":
        from .hosts_warm import disconnect

        return disconnect(args, session)
    if verb == "resolve":
        return resolve_target(args.target, args.config_file)
    if verb == "trust":
        if args.name not in session.hosts():
            raise GpudeckError(f"unknown host {args.name!r} (see `gpudeck hosts`)", EXIT_USAGE)
        trusted = trust(args.name, args.yes)
        for line in trusted:
            print(f"trusted {line}")
        if not trusted:
            print(f"{args.name}: host key already trusted")
        return 0
    return list_hosts(args, session)


def resolve_target(target: str, config_file: str | None) -> int:
    """`ssh -G` for gpudeck: a hosts.toml name is looked up as its target (with its identity file)."""
    from pathlib import Path

    from ..hosts_file import load_hosts
    from ..remote.ssh_config import load_config, resolve

    entry = load_hosts().get(target)
    spec, identity = (
        (entry.target, entry.identity_file) if entry is not None and not entry.is_local else (target, None)
    )
    try:
        resolved = resolve(spec, identity, load_config(Path(config_file) if config_file else None))
    except SshConfigError as exc:
        raise GpudeckError(f"hosts resolve: {exc}", EXIT_USAGE) from None
    print("\n".join(printable(line) for line in resolved.dump()))
    return 0


def set_settings(name: str, items: list[str], session: Session | None = None) -> int:
    """Price settings for the cost counters and budgets; validated here, dated in the ledger."""
    from ..cost.push import push_price
    from ..cost.settings import COST_KEYS, PRICE_KEYS, PriceSettingsError, host_price, validate_price_settings
    from ..hosts_file import host_fields

    raw: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise GpudeckError(f"hosts set: {item!r}: expected KEY=VALUE", EXIT_USAGE)
        if key not in COST_KEYS:
            raise GpudeckError(
                f"hosts set: unknown setting {key!r} (known: {', '.join(COST_KEYS)})", EXIT_USAGE
            )
        raw[key] = value
    if name not in load_hosts():
        raise GpudeckError(f"unknown host {name!r} (see `gpudeck hosts`)", EXIT_USAGE)
    try:
        values = validate_price_settings(raw)
    except PriceSettingsError as exc:
        raise GpudeckError(f"hosts set: {exc}", EXIT_USAGE) from None
    set_host_fields(name, values)
    if any(k in PRICE_KEYS for k in values):
        # Any price change (set, changed, switched to the catalog, removed) is dated now, here.
        now = time.time()
        price = host_price(host_fields(name))
        _date_price(name, now, price)
        if session is not None:  # connecting happens inside: a host down or unknown is one line
            # the agent's price file takes the ledger's timestamp: one moment per change, not two
            problem = push_price(lambda *a, **k: session.client(name).request(*a, **k), price, now)
            if problem:
                warn(f"{name}: {problem}")
    for key, value in values.items():
        print(f"{name}: {key} = {value}" if value is not None else f"{name}: {key} removed")
    return 0


def _date_price(name: str, now: float, price: HostPrice) -> None:
    """The change, dated in the ledger. state.db is derived: when it cannot be opened or written
    (locked, unreadable, a read-only home) hosts.toml keeps the change and `cost` dates it from the
    file's mtime, so this is a warning, not a failure."""
    import sqlite3

    from .. import paths
    from ..cost.ledger import Ledger
    from ..cost.report import terms

    try:
        paths.ensure_private(paths.data_dir())
        ledger = Ledger(paths.state_db())
    except (OSError, sqlite3.Error) as exc:
        warn(
            f"gpudeck: warning: {paths.state_db()}: {exc} ({paths.unwritable_hint(paths.data_dir(), paths.state_db())}); "
            f"the price change is in hosts.toml, dated by its mtime"
        )
        return
    try:
        ledger.record_price(
            name,
            now,
            price.per_hour,
            price.currency,
            price.source if price.known else f"price removed ({price.source})",
            now,
            terms(price),
        )
    finally:
        ledger.close()


def add(args: argparse.Namespace, session: Session) -> int:
    """Store the host only once its key is trusted and it let us in: a refused key, an unreachable
    host or a failed login leave hosts.toml as it was, so the same command can simply be run again.
    Run again after the agent check failed, it finds the same host stored and checks it again."""
    try:
        split_target(args.target)
    except SshConfigError as exc:
        raise GpudeckError(f"target {exc}", EXIT_USAGE) from None
    for option, value in (
        ("--identity-file", args.identity_file),
        ("--python", args.python),
        ("--agent-dir", args.agent_dir),
        *(("--setup", line) for line in args.setup),
    ):
        if value is not None and any(
            ord(c) < 32 or ord(c) == 127 for c in value
        ):  # a path or a shell line: one line
            raise GpudeckError(f"hosts add: {option} {printable(value)}: control characters", EXIT_USAGE)
    entry = HostEntry(
        name=args.name,
        target=args.target,
        identity_file=args.identity_file,
        python=args.python,
        agent_dir=args.agent_dir,
        setup=list(args.setup),
    )
    check_name(entry.name)
    slurm = slurm_table(args)
    existing = load_hosts().get(entry.name)
    stored = existing is not None and _same(existing, entry)
    if existing is not None and not stored:
        raise HostsFileError(f"host {entry.name} already exists (gpudeck hosts rm {entry.name} first)")
    if args.no_connect:
        if not stored:
            add_host(entry)
        if slurm is not None:
            set_host_fields(entry.name, {"slurm": slurm})
        print(
            f"added {args.name} ({args.target}) to {hosts_path()}, not connected: its key is not checked yet "
            f"(gpudeck hosts trust {args.name})"
        )
        return 0
    try:
        trusted = trust(args.name, args.yes, entry)
    except GpudeckError as exc:
        raise GpudeckError(f"{exc} (host {args.name} not added)", exc.code) from None
    for line in trusted:
        print(f"trusted {line}")
    if not stored:
        add_host(entry)
    if slurm is not None:
        set_host_fields(entry.name, {"slurm": slurm})
    print(f"added {args.name} ({args.target}) to {hosts_path()}")
    info = probe(session, args.name)
    if not info["reachable"]:
        raise GpudeckError(
            f"{info['error']} (host {args.name} is added; run this again once fixed)", EXIT_HOST
        )
    if slurm is not None:
        from .hosts_slurm import check_slurm

        print(check_slurm(session, args.name, added=True))
    print(
        f"{args.name}: agent {info['agent_version']} on {info['hostname']}, python {info['python']}, "
        f"{len(info['gpus'])} GPU(s)"
    )
    if info.get("warning"):
        warn(f"warning: {info['warning']}")
    return 0


def slurm_table(args: argparse.Namespace) -> dict[str, str] | None:
    """`[hosts.NAME.slurm]` from --slurm and its options; None without --slurm."""
    values = {k: getattr(args, k) for k in ("partition", "account", "qos") if getattr(args, k) is not None}
    if not args.slurm:
        if values:
            raise GpudeckError(f"hosts add: --{next(iter(values))}: goes with --slurm", EXIT_USAGE)
        return None
    for key, value in values.items():
        if not SLURM_VALUE_RE.match(value):
            raise GpudeckError(
                f"hosts add: --{key} {printable(value)}: expected 1-128 of A-Z a-z 0-9 _ . , : + -",
                EXIT_USAGE,
            )
    return values


def _same(a: HostEntry, b: HostEntry) -> bool:
    return (a.target, a.identity_file, a.python, a.agent_dir, list(a.setup)) == (
        b.target,
        b.identity_file,
        b.python,
        b.agent_dir,
        list(b.setup),
    )


def list_hosts(args: argparse.Namespace, session: Session) -> int:
    hosts = session.hosts()
    with ThreadPoolExecutor(max_workers=max(1, min(16, len(hosts)))) as pool:
        results = list(pool.map(lambda h: probe(session, h), hosts))
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    rows = []
    for r in results:
        if not r["reachable"]:
            rows.append([r["name"], "unreachable", "-", r["error"], "-"])
            continue
        gpus = ", ".join(f"{g.get('index')}:{g.get('name')}" for g in r["gpus"]) or (
            r["gpu_reason"] or "no GPU"
        )
        rows.append([r["name"], "ok", r["agent_version"] or "?", gpus, f"{r['clock_offset_s']:+.3f}s"])
    print(table(["HOST", "STATUS", "AGENT", "GPUS", "CLOCK"], rows))
    for r in results:
        if r.get("warning"):
            warn(f"warning: {r['name']}: {r['warning']}")
    return 0
