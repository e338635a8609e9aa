"""`gpudeck cloud ls|idle|stop|start|terminate|launch`: the user's cloud GPU instances.

Providers and regions come from config.toml `[cloud]` and the providers' own credential chains.
Everything that changes an instance asks first (naming it and its price per hour) unless `--yes`;
the provider layer (boto3, the Aliyun SDK) is imported only when a `cloud` verb runs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from typing import TYPE_CHECKING, Any

from ..cloud.totals import per_currency, total_text
from ..errors import EXIT_ERROR, EXIT_HOSTKEY, EXIT_USAGE, GpudeckError
from ..format import duration, local_time, money, table
from ..printable import printable, warn
from ..session import Session, settings

if TYPE_CHECKING:
    from ..cloud.fleet import InstanceView
    from ..cloud.model import Instance, Provider

NO_METRIC = "no GPU metric (monitoring agent missing?)"  # = tui.cloud.fleet.NO_METRIC, without its imports
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 60}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cloud",
        help="cloud GPU instances (AWS, Aliyun): ls, idle, stop, start, terminate, launch",
        description="Your AWS and Aliyun GPU instances: their GPU use and cost, the idle ones, and "
        "actions on them. Regions: config.toml [cloud]; credentials: the providers' own.",
    )
    verbs = p.add_subparsers(dest="cloud_verb", metavar="ACTION", required=True)
    ls = verbs.add_parser("ls", help="every GPU instance with its GPU utilization and price per hour")
    ls.add_argument("--provider", choices=("aws", "aliyun"), help="ask this provider only (default: both)")
    ls.add_argument("--json", action="store_true", help="a JSON list of instance objects")
    idle = verbs.add_parser(
        "idle", help="running GPU instances whose GPUs stayed under a threshold, with the waste"
    )
    idle.add_argument("--provider", choices=("aws", "aliyun"), help="ask this provider only (default: both)")
    idle.add_argument("--below", default="5%", metavar="PCT", help="GPU utilization threshold (default 5%%)")
    idle.add_argument(
        "--for", dest="window", default="30m", metavar="DURATION", help="how long (default 30m)"
    )
    idle.add_argument("--json", action="store_true", help="a JSON list of the idle instances")
    for verb, text in (
        ("stop", "stop instances (asks first, naming each and its $/h)"),
        ("start", "start stopped instances"),
        ("terminate", "terminate instances: gone with their disks (asks twice)"),
    ):
        v = verbs.add_parser(verb, help=text)
        v.add_argument("ids", nargs="+", metavar="ID", help="instance ids, as `gpudeck cloud ls` shows them")
        v.add_argument("--yes", action="store_true", help="do not ask")
    en = verbs.add_parser(
        "enforce",
        help="apply hosts' instance_idle_stop rules: stop opted-in idle instances (journaled)",
        description="For every host with instance_id and instance_idle_stop (gpudeck hosts set NAME "
        "instance_idle_stop=30m@5%), stop its instance when its GPUs stayed under the "
        "threshold. Only instances tagged gpudeck-managed=true are ever stopped. Each "
        "decision is journaled with its inputs (cloud-rules.jsonl in the data dir).",
    )
    en.add_argument("--dry-run", action="store_true", help="decide and journal, stop nothing")
    en.add_argument("--json", action="store_true", help="a JSON list of the decisions and what was done")
    la = verbs.add_parser("launch", help="launch a GPU instance and add it to hosts.toml when SSH answers")
    la.add_argument("--provider", choices=("aws", "aliyun"), required=True, help="where to launch")
    la.add_argument(
        "--type", required=True, dest="instance_type", help="e.g. g5.xlarge, ecs.gn7i-c8g1.2xlarge"
    )
    la.add_argument("--region", help="default: the first configured region")
    la.add_argument(
        "--spot", action="store_true", help="a spot instance (cheaper; the provider may take it back)"
    )
    la.add_argument("--image", help="AMI / image id")
    la.add_argument("--key", help="key pair name")
    la.add_argument("--subnet", help="subnet (AWS) or vSwitch (Aliyun) id")
    la.add_argument("--security-group", help="security group id")
    la.add_argument("--name", help="instance and host name (default: the instance id)")
    la.add_argument("--ssh-user", help="default: ubuntu on AWS, root on Aliyun")
    la.add_argument("--ssh-port", type=int, default=22, help="the port SSH answers on (default 22)")
    la.add_argument(
        "--identity-file", metavar="F", help="the private key for the key pair (default: as ssh chooses)"
    )
    la.add_argument(
        "--agent-dir",
        default="~/.gpudeck",
        metavar="DIR",
        help="the agent's directory there (default ~/.gpudeck)",
    )
    la.add_argument(
        "--timeout", type=float, default=600.0, metavar="S", help="wait this long for SSH (default 600)"
    )
    la.add_argument(
        "--no-wait", action="store_true", help="add the host without waiting for SSH or trusting its key"
    )
    la.add_argument(
        "--yes", action="store_true", help="do not ask before launching (the host key is still checked)"
    )


def parse_duration(text: str) -> float:
    m = _DURATION.match(text.strip().lower())
    if not m or float(m.group(1)) <= 0:
        raise GpudeckError(f"cloud idle: --for {text!r}: expected e.g. 30m, 2h, 90s", EXIT_USAGE)
    return float(m.group(1)) * _UNIT[m.group(2)]


def parse_percent(text: str) -> float:
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        value = -1.0
    if not 0 < value <= 100:
        raise GpudeckError(
            f"cloud idle: --below {text!r}: expected a percentage in (0, 100], e.g. 5%", EXIT_USAGE
        )
    return value


def confirm(question: str, yes: bool) -> bool:
    """--yes, or the user's `y` on stdin (a closed or empty stdin is a no: nothing is done unasked)."""
    if yes:
        return True
    sys.stderr.write(f"{printable(question)} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def run(args: argparse.Namespace, session: Session) -> int:
    verb = args.cloud_verb
    if verb == "ls":
        return list_instances(args)
    if verb == "idle":
        return idle(args)
    if verb == "launch":
        return launch(args, session)
    if verb == "enforce":
        return enforce(args, session)
    return act(args)


# -- ls / idle ---------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}%"


def _snapshot(provider: str | None, window: float = 1800.0, below: float = 5.0) -> Any:
    from ..cloud.fleet import snapshot

    snap = snapshot(settings(), provider, window=window, below=below)
    for line in snap.errors:
        warn(f"gpudeck: cloud: {line}")
    return snap


def list_instances(args: argparse.Namespace) -> int:
    snap = _snapshot(args.provider)
    if args.json:
        print(json.dumps([v.to_json() for v in snap.views], indent=2))
        return _code(snap)
    rows = []
    for v in snap.views:
        i = v.instance
        rows.append(
            [
                i.id,
                i.name or "-",
                i.provider,
                i.zone or i.region,
                i.type,
                f"{i.gpus or '?'}x {i.gpu_model or '?'}",
                i.state,
                i.lifecycle,
                money(v.price.per_hour, v.price.currency, "/h", unknown="unknown"),
                money(v.accrued, v.price.currency, unknown="-"),
                _pct(v.util.now) if v.has_metric else NO_METRIC,
                _pct(v.util.avg_1h),
                v.host or "-",
                i.address or "-",
                local_time(i.launch_time) if i.launch_time else "-",
            ]
        )
    print(
        table(
            [
                "ID",
                "NAME",
                "PROVIDER",
                "ZONE",
                "TYPE",
                "GPUS",
                "STATE",
                "MARKET",
                "PRICE",
                "SINCE START",
                "GPU NOW",
                "GPU 1H",
                "HOST",
                "ADDRESS",
                "LAUNCHED",
            ],
            rows,
        )
    )
    for v in snap.views:
        print(f"  {v.instance.id}: price: {v.price.source}; GPU: {v.util_source}")
    return _code(snap)


def _code(snap: Any) -> int:
    """A provider that could not be asked makes the list partial: exit 1 (its line is on stderr), as
    a host that cannot answer does for `ps`; the same for text and --json."""
    return EXIT_ERROR if snap.errors else 0


def idle(args: argparse.Namespace) -> int:
    window, below = parse_duration(args.window), parse_percent(args.below)
    snap = _snapshot(args.provider, window, below)
    found: list[InstanceView] = snap.idle()
    if args.json:
        print(json.dumps([v.to_json() for v in found], indent=2))
        return _code(snap)
    if found:
        now = snap.taken_at
        print(
            table(
                [
                    "ID",
                    "NAME",
                    "PROVIDER",
                    "REGION",
                    "TYPE",
                    f"GPU AVG {args.window}",
                    "IDLE FOR",
                    "WASTE/H",
                    "WASTED SINCE IDLE",
                ],
                [
                    [
                        v.instance.id,
                        v.instance.name or "-",
                        v.instance.provider,
                        v.instance.region,
                        v.instance.type,
                        _pct(v.util.window_avg),
                        duration(now - (v.util.idle_since or now)),
                        money(v.waste_per_hour, v.price.currency, "/h", unknown="unknown"),
                        money(v.waste_since_idle, v.price.currency, unknown="unknown"),
                    ]
                    for v in found
                ],
            )
        )
        cost = settings().cost  # one total per currency, or in [cost] currency where its fx has the rates
        sums = per_currency((v.waste_per_hour, v.price.currency) for v in found)
        print(f"wasting {total_text(sums, cost.fx, cost.currency, '/h')}")
    elif not snap.errors:  # "none idle" only when every provider answered
        print(f"no instance idle (GPU under {below:g}% for {args.window})")
    unjudged = [v for v in snap.views if v.instance.state == "running" and not v.has_metric]
    for v in unjudged:
        warn(f"not judged: {v.instance.id} ({v.instance.type}): {v.util_source}")
    return _code(snap)


# -- stop / start / terminate ------------------------------------------------------------------


def _providers() -> list[Provider]:
    from ..cloud import providers

    found, problems = providers.configured(settings().cloud)
    for line in problems:
        warn(f"gpudeck: cloud: {line}")
    return found


def _describe(instance: Instance, per_hour: float | None, currency: str) -> str:
    name = f" ({instance.name})" if instance.name else ""
    return (
        f"{instance.id}{name}, {instance.type} {instance.lifecycle}, {instance.provider} {instance.zone or instance.region}, "
        f"{instance.state}, {money(per_hour, currency, '/h', unknown='price unknown')}"
    )


def act(args: argparse.Namespace) -> int:
    from ..actions import cloud as core
    from ..cloud.pricing import price_for

    verb = args.cloud_verb
    providers = _providers()
    targets = [core.find(providers, instance_id) for instance_id in args.ids]  # all found before any acts
    failures = 0
    for found in targets:
        i = found.instance
        # idempotent: an instance already where it was asked to go is done, not a failure
        if (verb, i.state) in (
            ("stop", "stopped"),
            ("stop", "stopping"),
            ("start", "running"),
            ("start", "pending"),
        ):
            print(f"{i.id}: already {i.state}")
            continue
        if verb == "stop" and (why := core.stop_refusal(i)):
            warn(f"gpudeck: cloud stop: {why}")
            failures += 1
            continue
        price = price_for(found.provider, i, time.time())
        what = _describe(i, price.per_hour, price.currency)
        if not confirm(f"{verb.capitalize()} {what}?", args.yes) or (
            verb == "terminate"
            and not confirm(f"Terminating deletes {i.id} and its disks for good. Really terminate?", args.yes)
        ):
            print(f"{i.id}: not {verb}ped" if verb == "stop" else f"{i.id}: left as it is")
            failures += 1
            continue
        getattr(core, verb)(found)
        print(f"{i.id}: {'stopping' if verb == 'stop' else 'starting' if verb == 'start' else 'terminating'}")
    return 1 if failures else 0


def enforce(args: argparse.Namespace, session: Session) -> int:
    from dataclasses import asdict

    from ..actions import cloud as core
    from ..actions.hold import held_on
    from ..session import host_entries

    hosts = {name: dict(entry.extra) for name, entry in host_entries().items()}
    done = core.enforce(_providers(), hosts, dry_run=args.dry_run, held_on=lambda h: held_on(session, h))
    if args.json:
        print(json.dumps([{**asdict(d), "outcome": outcome} for d, outcome in done], indent=2))
        return 0
    if not done:
        print("no host has an instance_idle_stop rule (gpudeck hosts set NAME instance_idle_stop=30m@5%)")
    for d, outcome in done:
        print(f"{d.host} ({d.instance_id}): {outcome}: {d.reason}")
    return 1 if any(outcome.startswith("stop failed") for _d, outcome in done) else 0


# -- launch ------------------------------------------------------------------------------------


def launch(args: argparse.Namespace, session: Session) -> int:
    from ..actions import cloud as core
    from ..actions.cloud_launch import check_name
    from ..cloud import providers
    from ..cloud.model import CloudError, LaunchSpec
    from ..cloud.pricing import price_for

    check_name(args.name)  # before paying for an instance that could not be added
    if not 1 <= args.ssh_port <= 65535:
        raise GpudeckError(
            f"cloud launch: --ssh-port {args.ssh_port}: expected a port from 1 to 65535", EXIT_USAGE
        )
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise GpudeckError(f"cloud launch: --timeout {args.timeout:g}: expected seconds > 0", EXIT_USAGE)
    cloud = settings().cloud
    try:
        region = args.region or next(iter(providers.regions(args.provider, cloud)), None)
        if not region:
            raise GpudeckError(
                f"cloud launch: no {args.provider} region (--region, or [cloud] {args.provider}_regions)",
                EXIT_USAGE,
            )
        provider = providers.make(args.provider, region, cloud, timeout=30.0)
    except CloudError as exc:
        raise GpudeckError(str(exc)) from None
    spec = LaunchSpec(
        args.instance_type,
        core.new_token(),
        args.spot,
        args.image,
        args.key,
        args.subnet,
        args.security_group,
        args.name,
    )
    from ..cloud.model import Instance

    quote = price_for(
        provider,
        Instance(
            "(new)",
            args.provider,
            region,
            args.instance_type,
            "pending",
            "spot" if args.spot else "on-demand",
        ),
        time.time(),
    )
    market = "spot" if args.spot else "on-demand"
    if not confirm(
        f"Launch a {args.instance_type} {market} instance in {args.provider} {region} "
        f"({money(quote.per_hour, quote.currency, '/h', unknown='price unknown')}, {quote.source})?",
        args.yes,
    ):
        print("nothing launched")
        return 1
    instance_id = core.launch(provider, spec)
    warn(f"launched {instance_id} ({args.provider} {region}, token {spec.token})")
    instance = core.wait_running(provider, instance_id, timeout=args.timeout)
    name = args.name or instance.id
    user = args.ssh_user or ("ubuntu" if args.provider == "aws" else "root")
    address = instance.public_address or instance.private_address or ""
    # first: an SSH that never answers still leaves the host; priced by the quote the user said yes to
    _add_host(name, instance, user, address, args, (quote.per_hour, quote.currency))
    print(f"added host {name} ({user}@{address}:{args.ssh_port}, HostKeyAlias {instance.id})")
    if args.no_wait:
        print(f"check its key with `gpudeck hosts trust {name}` once it has booted")
        return 0
    try:
        core.wait_ssh(address, args.ssh_port, timeout=args.timeout)
    except GpudeckError as exc:
        raise GpudeckError(
            f"{exc}; {instance.id} runs and is host {name}: `gpudeck hosts trust {name}` once SSH "
            f"answers, or `gpudeck cloud stop {instance.id}`",
            exc.code,
        ) from None
    return _trust(session, provider, instance, name)


def _add_host(
    name: str,
    instance: Instance,
    user: str,
    address: str,
    args: argparse.Namespace,
    price: tuple[float | None, str],
) -> None:
    from ..actions.cloud_launch import access_fields, add_host

    access = access_fields(args.key, args.subnet, args.security_group)
    add_host(name, instance, user, address, args.ssh_port, args.identity_file, args.agent_dir, price, access)


def _trust(session: Session, provider: Provider, instance: Instance, name: str) -> int:
    """Trust the host key only if the provider published its fingerprint, or the user says yes."""
    from ..cloud.console import published_fingerprints
    from ..cloud.model import CloudError
    from ..remote.hostkey_errors import HostKeyError, fingerprint
    from ..remote.transport import TransportError
    from ..session import host_key_error, ssh_transport_for
    from .hosts import ask

    try:
        published = published_fingerprints(provider.console_output(instance))
    except CloudError as exc:
        warn(f"gpudeck: no console output to check the host key against: {exc}")
        published = set()

    def check(known_name: str, key: Any) -> bool:
        if fingerprint(key) in published:
            print(
                f"trusted {known_name} {key.get_name()} {fingerprint(key)} (published on the instance's console)"
            )
            return True
        return sys.stdin.isatty() and ask(known_name, key)

    transport = ssh_transport_for(name, confirm=check)
    try:
        transport.connect()
    except HostKeyError as exc:
        err = host_key_error(name, exc)
        warn(f"gpudeck: {err}")
        return EXIT_HOSTKEY
    except TransportError as exc:
        raise GpudeckError(f"host {name}: {exc}") from None
    finally:
        transport.close()
    print(f"{name}: ready (gpudeck run --host {name} -- …)")
    return 0
