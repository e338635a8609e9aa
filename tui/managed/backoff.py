"""A refused cloud launch cools its candidate down, so a controller pass every few seconds does not
hammer the provider's API while a zone has no capacity: the n-th refusal in a row of one candidate
(since the chain's last recovery) waits BASE·2ⁿ⁻¹ seconds, at most CAP, before it is asked again.
Every refused launch counts (a capacity error, a quota, an instance that never answered SSH).

After `--give-up-after` seconds since the first refusal of the current loss with no candidate had,
the chain gives up (the existing `gave_up` path: `failed`, the reason, [notify]).
The clock is the controller's (injected in tests); nothing here sleeps.
"""

from __future__ import annotations

from typing import Any

from .records import MAX_REFUSED, Managed

BASE = 60.0  # seconds the first refusal of a candidate waits
CAP = 1800.0  # the longest wait between two tries of one candidate


def since_last_recovery(m: Managed) -> list[dict[str, Any]]:
    """The refusals of the current loss: those after the chain's last recovery."""
    last = max((float(r.get("at") or 0) for r in m.recoveries), default=0.0)
    return [r for r in m.refused if float(r.get("at") or 0) > last]


def delay(count: int) -> float:
    """The wait after a candidate's `count`-th refusal in a row."""
    return min(CAP, BASE * 2.0 ** max(0, min(count, 30) - 1))


def next_try(m: Managed, candidate: str) -> float | None:
    """When the candidate may be asked again; None: now."""
    mine = [r for r in since_last_recovery(m) if r.get("candidate") == candidate]
    if not mine:
        return None
    return float(mine[-1].get("at") or 0) + delay(len(mine))


def cooling(m: Managed, now: float) -> dict[str, float]:
    """The candidates refused recently, with the time each may be asked again (after now)."""
    out: dict[str, float] = {}
    for c in {str(r.get("candidate")) for r in since_last_recovery(m)}:
        t = next_try(m, c)
        if t is not None and t > now:
            out[c] = t
    return out


def noted(m: Managed, tried: list[dict[str, Any]], now: float) -> Managed:
    """The chain with this pass's refusals kept; each journal record gains `next_try`."""
    refused = list(m.refused)
    for record in tried:
        if record.get("outcome") != "candidate_failed":
            continue
        kept = {k: record.get(k) for k in ("candidate", "code", "capacity", "error")}
        kept["at"] = round(now, 3)
        refused.append(kept)
        count = sum(
            1
            for r in since_last_recovery(m.but(refused=tuple(refused)))
            if r["candidate"] == kept["candidate"]
        )
        kept["next_try"] = record["next_try"] = round(now + delay(count), 3)
    kept_list = refused[-MAX_REFUSED:]
    first = since_last_recovery(m.but(refused=tuple(refused)))[:1]
    if first and first[0] not in kept_list:  # the loss's first refusal dates the give-up: never dropped
        kept_list = [first[0], *kept_list[1:]]
    return m.but(refused=tuple(kept_list))


def gave_up_why(m: Managed, now: float) -> str | None:
    """The give-up line once the current loss's refusals span `give_up_after`; None: keep trying."""
    mine = since_last_recovery(m)
    if not mine:
        return None
    first = min(float(r.get("at") or 0) for r in mine)
    if now - first < m.policy.give_up_after:
        return None
    codes: dict[str, int] = {}
    for r in mine:
        key = f"{r.get('candidate')}: {r.get('code') or 'refused'}"
        codes[key] = codes.get(key, 0) + 1
    said = ", ".join(f"{k} ×{n}" for k, n in codes.items())
    return f"gave up: no candidate could be had for {_span(now - first)} ({said})"


def _span(seconds: float) -> str:
    minutes = int(seconds // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m{int(seconds % 60):02d}s"
