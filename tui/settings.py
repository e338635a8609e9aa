"""config.toml, read once into one typed Settings: `[ssh]`, `[cost]`, `[ui]`, `[keys]`, `[cloud]`.

Every other module takes the typed values from here; nothing else parses config.toml. A value of the
wrong type is an error naming the file, the line and the field (`config.toml:7: [cost] daily_budget:
expected a number > 0, got 'lots'`), never a silent default. Writing (the theme the `t` key picks)
lives in tui/config.py.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

from . import paths
from .key_names import bad_modifier, normalize_keys

# `[notify]` lives in its own module; these names stay importable from here.
from .notify_settings import DEFAULT_NOTIFY_EVENTS, NOTIFY_EVENTS, NotifySettings  # noqa: F401
from .settings_cloud_access import ProviderLaunch, read_launch
from .tomlfile import BadToml, line_of, parse_bytes, where


class SettingsError(Exception):
    """config.toml cannot be used; the message is one line naming the file, line and field."""


@dataclass(frozen=True)
class SshSettings:
    """Connection timing (seconds)."""

    alive_timeout: float = 10.0  # silence on the stream (no heartbeat) that counts as a dead peer
    connect_timeout: float = 15.0
    backoff_initial: float = 0.5  # first reconnect after this, doubling…
    backoff_max: float = 15.0  # …up to this
    persist: float = 600.0  # a host's warm connection ends after this long idle; 0: none (ssh_persist.py)

    @property
    def heartbeat(self) -> float:
        return max(0.2, self.alive_timeout / 4)


# [cost.aws] / [cost.aliyun] keys of old, and the [cloud] key that replaced each.
MOVED_ENDPOINTS = {
    "aws": {"endpoint_url": "aws_endpoint_url", "endpoint": "aws_endpoint_url"},
    "aliyun": {
        "endpoint": "aliyun_ecs_endpoint (a URL: http://HOST:PORT)",
        "protocol": "aliyun_ecs_endpoint (a URL: http://HOST:PORT)",
    },
}


@dataclass(frozen=True)
class CostSettings:
    currency: str = "USD"  # what totals are shown in
    fx: Mapping[str, float] = field(default_factory=dict)  # 1 unit of KEY = VALUE of `currency`
    timezone: str | None = None  # what "today" means; None: this machine's zone
    daily_budget: float | None = None  # the fleet's budget per day, in `currency`

    @property
    def tz(self) -> dt.tzinfo:
        if self.timezone:
            from zoneinfo import ZoneInfo  # here: most commands never ask what "today" is

            return ZoneInfo(self.timezone)  # checked when loaded
        return dt.datetime.now().astimezone().tzinfo or dt.timezone.utc


@dataclass(frozen=True)
class CloudSettings:
    """Where `gpudeck cloud` looks. Empty regions: the provider's own default region. Credentials are
    never here: they come from the providers' own chains (boto3's; Aliyun's env and ~/.aliyun)."""

    aws_regions: tuple[str, ...] = ()
    aliyun_regions: tuple[str, ...] = ()
    aws_profile: str | None = None
    aws_endpoint_url: str | None = None  # else boto3's own AWS_ENDPOINT_URL
    aliyun_profile: str | None = None
    aliyun_ecs_endpoint: str | None = None  # URL; GPUDECK_ALIYUN_ECS_ENDPOINT wins over it
    aliyun_cms_endpoint: str | None = None  # URL; GPUDECK_ALIYUN_CMS_ENDPOINT wins over it
    refresh: float = 60.0  # seconds between the TUI Cloud tab's snapshots (each is a round of provider calls)
    aws: ProviderLaunch = field(default_factory=ProviderLaunch)  # [cloud.aws]: key pair, subnets, groups
    aliyun: ProviderLaunch = field(default_factory=ProviderLaunch)  # [cloud.aliyun]: …, vSwitches


@dataclass(frozen=True)
class UiSettings:
    theme: str | None = None
    read_only: bool = False  # the TUI refuses every action (stop, kill, restart, new job, scale)
    # Ended jobs whose loaded series stay in memory after their view closes (the most recently
    # closed); the others go back to a summary. Memory follows this, not the length of history.
    kept_ended_jobs: int = 2
    export_dir: str | None = None  # where the export key (E) writes; None: the current directory


@dataclass(frozen=True)
class Settings:
    ssh: SshSettings = field(default_factory=SshSettings)
    cost: CostSettings = field(default_factory=CostSettings)
    ui: UiSettings = field(default_factory=UiSettings)
    cloud: CloudSettings = field(default_factory=CloudSettings)
    keys: Mapping[str, str] = field(default_factory=dict)  # binding id -> key(s), Textual's keymap
    notify: NotifySettings = field(default_factory=NotifySettings)
    path: Path | None = None  # where they were read from (None: built in code)


def config_path() -> Path:
    return paths.config_dir() / "config.toml"


def load(path: Path | None = None) -> Settings:
    """The settings in config.toml (defaults when there is no file); SettingsError when unusable."""
    path = path or config_path()
    try:
        data, text = parse_bytes(path.read_bytes())
    except FileNotFoundError:
        return Settings(path=path)
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except BadToml as exc:
        raise SettingsError(f"{where(path, exc.line)}: {exc}") from None
    return _Reader(path, text).settings(data)


def load_or_default(path: Path | None = None) -> tuple[Settings, str | None]:
    """For callers that must go on (the TUI): the defaults and the one-line error when unusable."""
    try:
        return load(path), None
    except SettingsError as exc:
        return Settings(path=path or config_path()), str(exc)


_NUMBER = (int, float)
SECTIONS = ("ssh", "cost", "ui", "cloud", "keys", "notify")


class _Reader:
    """Checks each table's fields; `where` finds the line a field is on for the error."""

    def __init__(self, path: Path, text: str) -> None:
        self.path, self.lines = path, text.splitlines()

    def settings(self, data: dict[str, Any]) -> Settings:
        for key in data:  # a misspelt section would otherwise be a setting silently not applied
            if key not in SECTIONS:
                self.fail(
                    "",
                    key,
                    f"unknown section (known: {', '.join(SECTIONS)})",
                    header=key if isinstance(data[key], dict) else None,
                )
        return Settings(
            ssh=self.ssh(self.table(data, "ssh")),
            cost=self.cost(self.table(data, "cost")),
            ui=self.ui(self.table(data, "ui")),
            cloud=self.cloud(self.table(data, "cloud")),
            keys=self.keys(self.table(data, "keys")),
            notify=self.notify(self.table(data, "notify")),
            path=self.path,
        )

    def notify(self, t: dict[str, Any]) -> NotifySettings:
        from .notify_settings import read_notify

        return read_notify(self, t)

    # -- tables ------------------------------------------------------------------------------------

    def ssh(self, t: dict[str, Any]) -> SshSettings:
        self.known(
            t, "ssh", ("alive_timeout", "connect_timeout", "backoff_initial", "backoff_max", "persist")
        )
        values = {k: self.positive(t, "ssh", k) for k in t if k != "persist"}
        if "persist" in t:
            from . import ssh_persist

            try:
                values["persist"] = ssh_persist.parse(t["persist"])
            except ValueError as exc:
                self.fail("ssh", "persist", str(exc))
        s = SshSettings(**{k: v for k, v in values.items() if v is not None})
        if s.backoff_max < s.backoff_initial:
            self.fail("ssh", "backoff_max", f"must be >= backoff_initial ({s.backoff_initial:g})")
        return s

    def cost(self, t: dict[str, Any]) -> CostSettings:
        self.known(t, "cost", ("currency", "fx", "timezone", "daily_budget", "aws", "aliyun"))
        currency = (self.string(t, "cost", "currency") or "USD").upper()
        fx_table = self.table(t, "fx", "cost.fx")
        fx = {}
        for key in fx_table:
            rate = self.positive(fx_table, "cost.fx", key)
            fx[str(key).upper()] = float(rate) if rate is not None else 0.0
        zone = self.string(t, "cost", "timezone")
        if zone:
            from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

            try:
                ZoneInfo(zone)
            except (ZoneInfoNotFoundError, ValueError):
                self.fail("cost", "timezone", f'unknown time zone {zone!r} (e.g. "Europe/Berlin", "UTC")')
        # One setting per endpoint: the price lookups use `gpudeck cloud`'s clients and its [cloud] URLs.
        for provider, keys in MOVED_ENDPOINTS.items():
            old = self.table(t, provider, f"cost.{provider}")
            for key in old:
                self.fail(
                    f"cost.{provider}",
                    key,
                    f"moved: set [cloud] {keys.get(key, keys['endpoint'])} "
                    "(one endpoint setting for `gpudeck cloud` and the prices)",
                )
        return CostSettings(
            currency=currency,
            fx=MappingProxyType(fx),
            timezone=zone or None,
            daily_budget=self.positive(t, "cost", "daily_budget"),
        )

    def ui(self, t: dict[str, Any]) -> UiSettings:
        self.known(t, "ui", ("theme", "read_only", "kept_ended_jobs", "export_dir"))
        kept = t.get("kept_ended_jobs", 2)
        if isinstance(kept, bool) or not isinstance(kept, int) or not 0 <= kept <= 1000:
            self.fail("ui", "kept_ended_jobs", f"expected a whole number from 0 to 1000, got {kept!r}")
        return UiSettings(
            theme=self.string(t, "ui", "theme"),
            read_only=self.boolean(t, "ui", "read_only") or False,
            kept_ended_jobs=kept,
            export_dir=self.string(t, "ui", "export_dir"),
        )

    def cloud(self, t: dict[str, Any]) -> CloudSettings:
        urls = ("aws_endpoint_url", "aliyun_ecs_endpoint", "aliyun_cms_endpoint")
        self.known(
            t,
            "cloud",
            (
                "aws_regions",
                "aliyun_regions",
                "aws_profile",
                "aliyun_profile",
                "refresh",
                *urls,
                "aws",
                "aliyun",
            ),
        )
        for key in urls:
            value = self.string(t, "cloud", key)
            if value and not re.match(r"^https?://[^/\s]+/?$", value):
                self.fail("cloud", key, f'expected a URL such as "http://127.0.0.1:8080", got {value!r}')
        return CloudSettings(
            aws_regions=self.strings(t, "cloud", "aws_regions"),
            aliyun_regions=self.strings(t, "cloud", "aliyun_regions"),
            aws_profile=self.string(t, "cloud", "aws_profile") or None,
            aliyun_profile=self.string(t, "cloud", "aliyun_profile") or None,
            refresh=self.positive(t, "cloud", "refresh") or 60.0,
            **{key: self.string(t, "cloud", key) or None for key in urls},
            aws=read_launch(self, "aws", t["aws"]) if "aws" in t else ProviderLaunch(),
            aliyun=read_launch(self, "aliyun", t["aliyun"]) if "aliyun" in t else ProviderLaunch(),
        )

    def keys(self, t: dict[str, Any]) -> Mapping[str, str]:
        keymap: dict[str, str] = {}
        for binding_id in t:
            key = self.string(t, "keys", binding_id)
            if not key or not key.replace(",", "").strip():
                self.fail("keys", binding_id, 'expected a key such as "x" or "ctrl+x"')
            modifier = bad_modifier(key)
            if modifier:
                self.fail("keys", binding_id, f"{modifier!r} is no modifier (ctrl, shift, alt, meta, super)")
            keymap[str(binding_id)] = normalize_keys(key)  # as Textual names keys: "F1" fires as "f1"
        return MappingProxyType(keymap)

    # -- fields ------------------------------------------------------------------------------------

    def table(self, data: dict[str, Any], key: str, name: str | None = None) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            parent, _, leaf = (name or key).rpartition(".")
            self.fail(parent, leaf, "expected a table", header=name or key)
        return value

    def known(self, t: dict[str, Any], table: str, fields: tuple[str, ...]) -> None:
        for key in t:
            if key not in fields:
                self.fail(table, key, f"unknown setting (known: {', '.join(fields)})")

    def string(self, t: dict[str, Any], table: str, key: str) -> str | None:
        value = t.get(key)
        if value is not None and not isinstance(value, str):
            self.fail(table, key, f"expected a string, got {value!r}")
        return value

    def strings(self, t: dict[str, Any], table: str, key: str) -> tuple[str, ...]:
        value = t.get(key, [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(table, key, f'expected a list of names such as ["us-east-1"], got {value!r}')
        return tuple(value)

    def boolean(self, t: dict[str, Any], table: str, key: str) -> bool | None:
        value = t.get(key)
        if value is not None and not isinstance(value, bool):
            self.fail(table, key, f"expected true or false, got {value!r}")
        return value

    def positive(self, t: dict[str, Any], table: str, key: str) -> float | None:
        value = t.get(key)
        if value is None:
            return None
        if not isinstance(value, _NUMBER) or isinstance(value, bool) or not value > 0 or value != value:
            self.fail(table, key, f"expected a number > 0, got {value!r}")
        return float(value)

    def fail(self, table: str, key: str, problem: str, header: str | None = None) -> NoReturn:
        line = self.line_of(table, key, header)
        label = f"[{table}] {key}" if table else key
        raise SettingsError(f"{where(self.path, line)}: {label}: {problem}")

    def line_of(self, table: str, key: str, header: str | None = None) -> int | None:
        return line_of(self.lines, table, key, header)
