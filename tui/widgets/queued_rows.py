"""The jobs tab's rows for jobs waiting in this machine's queue (`run --queue`): first, in the
order they will start, each saying how many wait ahead of it in its pool and why. They are not
jobs yet (no host has them), so their keys are `queued:ID`, which no job id can be."""

from __future__ import annotations

from typing import Any

from textual.content import Content

from ..format import duration

PREFIX = "queued:"


def queued_key(entry: dict[str, Any]) -> str:
    return PREFIX + str(entry.get("id"))


def queued_id(key: str | None) -> str | None:
    """The queued job's id of a row key; None for a job's row."""
    return key[len(PREFIX) :] if key and key.startswith(PREFIX) else None


def matches_queued(entry: dict[str, Any], text: str) -> bool:
    text = text.lower()
    fields = (str(entry.get("name") or ""), str(entry.get("id") or ""), str(entry.get("state") or ""))
    return not text or any(text in f.lower() for f in (*fields, *map(str, entry.get("pool") or ())))


def queued_cells(entry: dict[str, Any], now: float) -> dict[str, str | Content]:
    """Every column's cell (the table keeps those that fit); names and pools are user text: never markup."""
    starting = entry.get("state") == "starting"
    ahead = entry.get("ahead") or 0
    submitted = entry.get("submitted_at")
    waited = duration(now - submitted) if isinstance(submitted, (int, float)) else "—"
    why = str(entry.get("why") or "")
    info = why if starting or not ahead else f"{ahead} ahead; {why}"
    name = Content.styled(str(entry.get("name") or entry.get("id")), "bold")
    cells: dict[str, str | Content] = {
        "name": name,
        "id": Content.styled(str(entry.get("id"))[-6:], "$text-muted"),
        "hosts": Content(",".join(map(str, entry.get("pool") or ())) or "—"),
        "state": Content.styled("starting" if starting else "queued", "$secondary"),
        "runtime": waited,
        "info": Content.styled(info, "$text-muted"),
    }
    return cells
