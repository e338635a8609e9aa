"""policies.toml, read once into typed rules: `[[rule]]` of kind metric / schedule / vertical, `[pool.NAME]`.

Every field is checked when the file is read; a bad one is one line naming the file, the line and
the field (`policies.toml:12: rule "backlog": for: expected a duration such as "5m", got 'soon'`).
The engine never sees an unchecked value.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, overload
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .. import paths
from ..tomlfile import TOMLDecodeError, parse_toml
from . import durations

KINDS = ("metric", "schedule", "vertical")
HOST_METRICS = ("gpu_util", "gpu_mem")
OLD_INSTANCE = (
    "stop",
    "keep",
    "terminate",
)  # from the job's hosts' GPU samples; anything else: a number the job prints


class PolicyError(Exception):
    """policies.toml cannot be used; the message is one line naming the file, line and field."""


@dataclass(frozen=True)
class Pool:
    name: str
    hosts: tuple[str, ...]
    launch: bool = False  # may the controller launch a cloud instance when no host of it has a free GPU
    # what it launches (needed with launch = true): see the README's Policies, "Capacity"
    provider: str | None = None  # aws | aliyun
    instance_type: str | None = None
    region: str | None = None  # default: the first of [cloud] <provider>_regions
    spot: bool = False
    image: str | None = None
    key: str | None = None  # the provider's key pair name
    ssh_user: str | None = None  # default: ubuntu on AWS, root on Aliyun
    ssh_port: int = 22
    identity_file: str | None = None
    agent_dir: str = "~/.gpudeck"
    zone: str | None = None  # default: the provider's choice in the region
    subnet: str | None = None  # the network, as `cloud launch --subnet/--security-group`
    security_group: str | None = None
    # the queue's capacity (tui/policy/queue_capacity.py): queued jobs waiting for GPUs the pool cannot
    # give launch instances while the ones launched for the queue cost at most this per hour ([cost]
    # currency); None: the queue launches nothing. An instance it launched is released once it ran
    # no job for `idle_release` seconds.
    max_spend_per_hour: float | None = None
    idle_release: float = 600.0


@dataclass(frozen=True)
class Rule:
    name: str
    kind: str
    line: int  # of its [[rule]] header, for messages
    jobs: str | None = None  # job-name glob
    pool: str | None = None
    auto: bool = True  # False: the controller only proposes
    cooldown: float = 0.0  # seconds after an applied decision before the rule acts on that job again
    # metric and vertical
    metric: str = ""
    above: float | None = None
    below: float | None = None
    hold: float = 0.0  # `for`: how long the condition must hold
    # metric
    add: int = 0
    min: int = 1
    max: int | None = None
    # schedule
    days: frozenset[int] = field(default_factory=frozenset)
    start: dt.time | None = None
    end: dt.time | None = None
    timezone: str = "UTC"
    nodes: int = 0
    otherwise: int | None = None
    # vertical: what becomes of the instance a job moved off (only one tagged gpudeck-managed, running nothing else)
    old_instance: str = "stop"

    def matches(self, job_name: str, job_hosts: list[str], pools: dict[str, Pool]) -> bool:
        """Whether the rule is about this job: its name matches `jobs`, or all its hosts are in `pool`."""
        if self.jobs is not None:
            return fnmatch.fnmatchcase(job_name, self.jobs)
        pool = pools.get(self.pool or "")
        return pool is not None and bool(job_hosts) and all(h in pool.hosts for h in job_hosts)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)  # checked when read


@dataclass(frozen=True)
class Policies:
    rules: tuple[Rule, ...] = ()
    pools: dict[str, Pool] = field(default_factory=dict)
    path: Path | None = None


def policies_path() -> Path:
    return paths.config_dir() / "policies.toml"


def load(path: Path | None = None) -> Policies:
    """The rules in policies.toml (none when there is no file); PolicyError when unusable."""
    path = path or policies_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Policies(path=path)
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    return parse(text, path)


def parse(text: str, path: Path) -> Policies:
    try:
        data = parse_toml(text)
    except TOMLDecodeError as exc:  # its message ends "(at line N, column M)"
        raise PolicyError(f"{path}: not valid TOML: {exc}") from None
    return _Reader(path, text).policies(data)


_POOL_FIELDS = (
    "hosts",
    "launch",
    "provider",
    "instance_type",
    "region",
    "spot",
    "image",
    "key",
    "ssh_user",
    "ssh_port",
    "identity_file",
    "agent_dir",
    "zone",
    "subnet",
    "security_group",
    "max_spend_per_hour",
    "idle_release",
)
_COMMON = ("name", "kind", "jobs", "pool", "auto", "cooldown")
_FIELDS = {
    "metric": (*_COMMON, "metric", "above", "below", "for", "add", "min", "max"),
    "schedule": (*_COMMON, "days", "between", "timezone", "nodes", "otherwise"),
    "vertical": (*_COMMON, "metric", "above", "for", "old_instance"),
}


class _Reader:
    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines = path, text.splitlines()
        self.headers = [n for n, raw in enumerate(self.lines, 1) if re.match(r"^\s*\[\[\s*rule\s*\]\]", raw)]

    def policies(self, data: dict[str, Any]) -> Policies:
        for key in data:
            if key not in ("rule", "pool"):
                hint = " — did you mean [[rule]]?" if key in ("rules", "Rule", "RULE") else ""
                self.at_line(
                    self.table_line(key), key, f"unknown table or key (known: [[rule]], [pool.NAME]){hint}"
                )
        pools = self.pools(data.get("pool", {}))
        raw_rules = data.get("rule", [])
        if not isinstance(raw_rules, list):
            self.fail(None, None, "rule", "expected [[rule]] tables")
        rules: list[Rule] = []
        for i, t in enumerate(raw_rules):
            rule = self.rule(i, t, pools)
            if any(r.name == rule.name for r in rules):
                self.fail(
                    i, rule.name, "name", f"{rule.name!r} is used by an earlier rule: names must be unique"
                )
            rules.append(rule)
        return Policies(tuple(rules), pools, self.path)

    def pools(self, t: Any) -> dict[str, Pool]:
        if not isinstance(t, dict):
            self.fail(None, None, "pool", "expected [pool.NAME] tables")
        out = {}
        for name, p in t.items():
            if not isinstance(p, dict):
                self.fail(None, None, f"pool.{name}", "expected a table with hosts = [...]")
            for key in p:
                if key not in _POOL_FIELDS:
                    self.pool_fail(name, key, f"unknown field (known: {', '.join(_POOL_FIELDS)})")
            hosts = p.get("hosts")
            if not isinstance(hosts, list) or not hosts or not all(isinstance(h, str) and h for h in hosts):
                self.pool_fail(name, "hosts", f"expected a list of host names, got {hosts!r}")
            launch = p.get("launch", False)
            if not isinstance(launch, bool):
                self.pool_fail(name, "launch", f"expected true or false, got {launch!r}")
            out[name] = Pool(name, tuple(hosts), launch, **self.launch_fields(name, p, launch))
        return out

    def rule(self, i: int, t: Any, pools: dict[str, Pool]) -> Rule:
        if not isinstance(t, dict):
            self.fail(i, None, "rule", "expected a table")
        name = t.get("name")
        if not isinstance(name, str) or not name.strip():
            self.fail(i, None, "name", f"expected a name for the rule, got {name!r}")
        kind = t.get("kind")
        if kind not in KINDS:
            self.fail(i, name, "kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
        for key in t:
            if key not in _FIELDS[kind]:
                self.fail(
                    i, name, key, f"unknown field for a {kind} rule (known: {', '.join(_FIELDS[kind])})"
                )
        jobs, pool = t.get("jobs"), t.get("pool")
        if (jobs is None) == (pool is None):
            self.fail(i, name, "jobs", 'expected either jobs = "GLOB" (job names) or pool = "NAME"')
        for key, value in (("jobs", jobs), ("pool", pool)):
            if value is not None and (not isinstance(value, str) or not value):
                self.fail(i, name, key, f"expected a string, got {value!r}")
        if pool is not None and pool not in pools:
            known = ", ".join(pools) or "none defined"
            self.fail(i, name, "pool", f"no [pool.{pool}] (pools: {known})")
        common: dict[str, Any] = {
            "name": name,
            "kind": kind,
            "line": self.headers[i] if i < len(self.headers) else 0,
            "jobs": jobs,
            "pool": pool,
        }
        rule: Rule = getattr(self, kind)(i, name, t, common)  # metric, schedule or vertical, below
        return rule

    # -- kinds -------------------------------------------------------------------------------------

    def metric(self, i: int, name: str, t: dict[str, Any], common: dict[str, Any]) -> Rule:
        metric = t.get("metric")
        if not isinstance(metric, str) or not metric:
            self.fail(
                i, name, "metric", f'expected a metric name (e.g. "backlog", "gpu_util"), got {metric!r}'
            )
        above, below = self.number(i, name, t, "above"), self.number(i, name, t, "below")
        if (above is None) == (below is None):
            self.fail(i, name, "above", "expected one threshold: above = N or below = N")
        add = t.get("add")
        if not isinstance(add, int) or isinstance(add, bool) or add == 0:
            self.fail(
                i,
                name,
                "add",
                f"expected a whole number of nodes to add (negative: remove), not 0, got {add!r}",
            )
        low = self.count(i, name, t, "min", 1)
        high = self.count(i, name, t, "max", None)
        if add > 0 and high is None:
            self.fail(i, name, "add", "a rule that adds nodes needs max = N (the most nodes it may reach)")
        if high is not None and high < low:
            self.fail(i, name, "max", f"must be >= min ({low})")
        return Rule(
            **common,
            auto=self.flag(i, name, t, "auto", True),
            cooldown=self.duration(i, name, t, "cooldown", 600.0),
            metric=metric,
            above=above,
            below=below,
            hold=self.duration(i, name, t, "for", 0.0),
            add=add,
            min=low,
            max=high,
        )

    def schedule(self, i: int, name: str, t: dict[str, Any], common: dict[str, Any]) -> Rule:
        try:
            days = durations.days(t.get("days", "daily"))
        except ValueError as exc:
            self.fail(i, name, "days", str(exc))
        if "between" not in t:
            self.fail(i, name, "between", 'missing: the window, e.g. between = "09:00-18:00"')
        try:
            start, end = durations.window(t["between"])
        except ValueError as exc:
            self.fail(i, name, "between", str(exc))
        zone = t.get("timezone", "UTC")
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError, TypeError):
            self.fail(i, name, "timezone", f'unknown time zone {zone!r} (e.g. "Asia/Shanghai", "UTC")')
        nodes = self.count(i, name, t, "nodes", None)
        if nodes is None:
            self.fail(i, name, "nodes", "missing: the node count inside the window")
        return Rule(
            **common,
            auto=self.flag(i, name, t, "auto", True),
            cooldown=self.duration(i, name, t, "cooldown", 0.0),
            days=days,
            start=start,
            end=end,
            timezone=zone,
            nodes=nodes,
            otherwise=self.count(i, name, t, "otherwise", None),
        )

    def vertical(self, i: int, name: str, t: dict[str, Any], common: dict[str, Any]) -> Rule:
        metric = t.get("metric", "gpu_util")
        if metric not in HOST_METRICS:
            self.fail(i, name, "metric", f"expected one of {', '.join(HOST_METRICS)}, got {metric!r}")
        above = self.number(i, name, t, "above")
        old = t.get("old_instance", "stop")
        if old not in OLD_INSTANCE:
            self.fail(i, name, "old_instance", f"expected one of {', '.join(OLD_INSTANCE)}, got {old!r}")
        # auto = true: applied where the job restarts cleanly on the bigger type (engine.py says where)
        return Rule(
            **common,
            auto=self.flag(i, name, t, "auto", False),
            cooldown=self.duration(i, name, t, "cooldown", 3600.0),
            metric=metric,
            above=90.0 if above is None else above,
            hold=self.duration(i, name, t, "for", 600.0),
            old_instance=old,
        )

    # -- fields ------------------------------------------------------------------------------------

    def number(self, i: int, name: str, t: dict[str, Any], key: str) -> float | None:
        value = t.get(key)
        if value is None:
            return None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            self.fail(i, name, key, f"expected a number, got {value!r}")
        if not math.isfinite(value):  # `above = inf` would never fire, silently
            self.fail(i, name, key, f"expected a finite number, got {value!r}")
        return float(value)

    @overload
    def count(self, i: int, name: str, t: dict[str, Any], key: str, default: int) -> int: ...
    @overload
    def count(self, i: int, name: str, t: dict[str, Any], key: str, default: None) -> int | None: ...
    def count(self, i: int, name: str, t: dict[str, Any], key: str, default: int | None) -> int | None:
        value = t.get(key, default)
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 4096
        ):
            self.fail(i, name, key, f"expected a node count (1 or more), got {value!r}")
        return value

    def flag(self, i: int, name: str, t: dict[str, Any], key: str, default: bool) -> bool:
        value = t.get(key, default)
        if not isinstance(value, bool):
            self.fail(i, name, key, f"expected true or false, got {value!r}")
        return value

    def duration(self, i: int, name: str, t: dict[str, Any], key: str, default: float) -> float:
        if key not in t:
            return default
        try:
            return durations.duration(t[key])
        except ValueError as exc:
            self.fail(i, name, key, str(exc))
            raise  # unreachable: fail raises

    # -- errors ------------------------------------------------------------------------------------

    def fail(self, i: int | None, rule: str | None, key: str, problem: str) -> NoReturn:
        line = self.line_of(i, key)
        where = f"{self.path}:{line}" if line else str(self.path)
        label = f"rule {rule!r}: {key}" if rule else (f"rule {i + 1}: {key}" if i is not None else key)
        raise PolicyError(f"{where}: {label}: {problem}")

    def table_line(self, key: str) -> int | None:
        """The line of `[key]`, `[[key]]`, `[key.…]` or a top-level `key = …`."""
        header = re.compile(rf"""^\s*\[\[?\s*"?{re.escape(key)}"?\s*[\].]""")
        assign = re.compile(rf"""^(?:{re.escape(key)}|"{re.escape(key)}")\s*=""")
        for number, raw in enumerate(self.lines, 1):
            if header.match(raw) or assign.match(raw):
                return number
        return None

    def at_line(self, line: int | None, key: str, problem: str) -> NoReturn:
        where = f"{self.path}:{line}" if line else str(self.path)
        raise PolicyError(f"{where}: {key}: {problem}")

    def launch_fields(self, name: str, p: dict[str, Any], launch: bool) -> dict[str, Any]:
        """What a pool launches: provider and instance_type are required with launch = true."""
        out: dict[str, Any] = {}
        for key in (
            "provider",
            "instance_type",
            "region",
            "image",
            "key",
            "ssh_user",
            "identity_file",
            "agent_dir",
            "zone",
            "subnet",
            "security_group",
        ):
            value = p.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                self.pool_fail(name, key, f"expected a non-empty string, got {value!r}")
            if value is not None:
                out[key] = value
        if launch and "provider" not in out:
            self.pool_fail(
                name, "launch", 'launch = true needs provider = "aws" or "aliyun" and instance_type'
            )
        if "provider" in out and out["provider"] not in ("aws", "aliyun"):
            self.pool_fail(name, "provider", f'expected "aws" or "aliyun", got {out["provider"]!r}')
        if launch and "instance_type" not in out:
            self.pool_fail(name, "launch", 'launch = true needs instance_type (e.g. "ecs.gn7i-c8g1.2xlarge")')
        if launch and "image" not in out:
            self.pool_fail(
                name, "launch", "launch = true needs image (an AMI id on AWS, an image id on Aliyun)"
            )
        spot, port = p.get("spot", False), p.get("ssh_port", 22)
        if not isinstance(spot, bool):
            self.pool_fail(name, "spot", f"expected true or false, got {spot!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            self.pool_fail(name, "ssh_port", f"expected a port number 1-65535, got {port!r}")
        return {**out, "spot": spot, "ssh_port": port, **self.queue_fields(name, p, launch)}

    def queue_fields(self, name: str, p: dict[str, Any], launch: bool) -> dict[str, Any]:
        """The queue's spend ceiling and idle release (they need launch = true to mean anything)."""
        out: dict[str, Any] = {}
        spend = p.get("max_spend_per_hour")
        if spend is not None:
            if isinstance(spend, bool) or not isinstance(spend, (int, float)) or not 0 < spend < math.inf:
                self.pool_fail(name, "max_spend_per_hour", f"expected a number > 0, got {spend!r}")
            if not launch:
                self.pool_fail(
                    name, "max_spend_per_hour", "needs launch = true (it caps the queue's launches)"
                )
            out["max_spend_per_hour"] = float(spend)
        if "idle_release" in p:
            try:
                out["idle_release"] = durations.duration(p["idle_release"])
            except ValueError as exc:
                self.pool_fail(name, "idle_release", str(exc))
        return out

    def pool_fail(self, pool: str, key: str, problem: str) -> NoReturn:
        head = next(
            (
                n
                for n, raw in enumerate(self.lines, 1)
                if re.match(rf"^\s*\[\s*pool\.\"?{re.escape(pool)}\"?\s*\]", raw)
            ),
            None,
        )
        line = self._key_after(head, key) if head else None
        where = f"{self.path}:{line or head}" if (line or head) else str(self.path)
        raise PolicyError(f"{where}: [pool.{pool}] {key}: {problem}")

    def line_of(self, i: int | None, key: str) -> int | None:
        """The line of `key = …` inside the i-th [[rule]] (else its header line)."""
        if i is None or i >= len(self.headers):
            return None
        return self._key_after(self.headers[i], key) or self.headers[i]

    def _key_after(self, head: int, key: str) -> int | None:
        key_re = re.compile(rf"""^\s*(?:{re.escape(key)}|"{re.escape(key)}"|'{re.escape(key)}')\s*=""")
        for number in range(head + 1, len(self.lines) + 1):
            raw = self.lines[number - 1]
            if re.match(r"^\s*\[", raw):
                return None
            if key_re.match(raw):
                return number
        return None
