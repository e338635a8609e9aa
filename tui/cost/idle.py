"""The idle-stop rule's text form (`--idle-stop`, hosts.toml `idle_stop`): `30m@10%+15m` or `off`."""

from __future__ import annotations

import re

IDLE_DEFAULTS = {"below_pct": 10.0, "minutes": 30.0, "grace_minutes": 15.0}
_UNITS = {"s": 1 / 60, "m": 1.0, "h": 60.0, "": 1.0}
_IDLE = re.compile(
    r"^(?:(?P<n>\d+(?:\.\d+)?)(?P<u>[smh]?))?(?:@(?P<pct>\d+(?:\.\d+)?)%?)?"
    r"(?:\+(?P<g>\d+(?:\.\d+)?)(?P<gu>[smh]?))?$"
)


class CostRuleError(ValueError):
    """One line for the user: which option and why."""


def parse_idle_stop(text: str | None) -> dict[str, float] | None:
    """`30m@10%` (N minutes under X %), `45m`, `@5%`, `30m@10%+20m` (grace from start), `off`."""
    if text is None:
        return None
    text = text.strip().lower()
    if text in ("off", "none", "no", ""):
        return None
    m = _IDLE.match(text)
    if not m or not (m["n"] or m["pct"] or m["g"]):
        raise CostRuleError(
            f"--idle-stop {text!r}: expected e.g. 30m@10% (30 minutes under 10 %), 45m, @5%, 30m@10%+15m, or off"
        )
    out = dict(IDLE_DEFAULTS)
    if m["n"]:
        out["minutes"] = float(m["n"]) * _UNITS[m["u"]]
    if m["pct"]:
        out["below_pct"] = float(m["pct"])
    if m["g"]:
        out["grace_minutes"] = float(m["g"]) * _UNITS[m["gu"]]
    if not 0 < out["below_pct"] <= 100 or out["minutes"] <= 0:
        raise CostRuleError(f"--idle-stop {text!r}: the threshold must be in (0, 100] % and the time > 0")
    return out
