"""stable-baselines3's logger table: one point per table, read at its closing rule.

    -----------------------------------------
    | rollout/                |             |
    |    ep_rew_mean          | -227        |
    | time/                   |             |
    |    total_timesteps      | 77824       |
    | train/                  |             |
    |    loss                 | 0.245       |
    -----------------------------------------

Rows name their section (``train/``, ``rollout/``, ``time/``, ``eval/``) on a row of their own.
``train/loss`` is the loss (DQN, PPO; SAC/TD3's ``actor_loss``/``critic_loss`` are an actor's
and a critic's, never summed into one); ``time/total_timesteps`` is the step; ``eval/`` values
are validation (``val_mean_reward``); other sections keep their name (``rollout/ep_rew_mean``).
A row that is no ``| name | number |`` pair (a truncated name, a text value) is skipped; a table
without a closing rule reads nothing.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from .canonical import normalise
from .values import Number, to_number

Values = Dict[str, Number]

_RULE = re.compile(r"-{8,}\Z")
_SECTION = re.compile(r"\|\s(?P<name>[\w.]+)/\s*\|\s*\|\Z")
_ROW = re.compile(r"\|\s+(?P<name>\S+)\s*\|\s(?P<value>\S+)\s*\|\Z")
_MAX_ROWS = 200


def is_table_line(text: str) -> bool:
    """A rule or a row of such a table: read with the lines around it, never by a template."""
    return (text[:1] == "|" and text[-1:] == "|") or _RULE.match(text) is not None


class RLTable:
    """The rows of the table being printed, until its closing rule."""

    def __init__(self) -> None:
        self._rows: Optional[Values] = None  # None: outside a table
        self._section = ""

    @property
    def open(self) -> bool:
        return self._rows is not None

    def close(self) -> None:
        self._rows = None

    def feed(self, text: str) -> Optional[Values]:
        """The table's point at its closing rule; None for every other line (and rows are taken)."""
        if _RULE.match(text):
            rows, self._rows, self._section = self._rows, {}, ""
            if rows:  # the closing rule: the next rule opens the next table
                self._rows = None
                return _point(rows)
            return None
        if self._rows is None:
            return None
        m = _SECTION.match(text)
        if m is not None:
            self._section = m.group("name")
            return None
        m = _ROW.match(text)
        if m is None or len(self._rows) >= _MAX_ROWS:
            self._rows = None  # not this table's layout: read nothing of it
            return None
        value = to_number(m.group("value"))
        if value is not None and not m.group("name").endswith("..."):
            name = m.group("name")
            self._rows[self._section + "/" + name if self._section else name] = value
        return None


def _point(rows: Values) -> Optional[Values]:
    values: Values = {}
    for key, value in rows.items():
        section, _, name = key.rpartition("/")
        if key == "time/total_timesteps":
            values["step"] = value
        elif section == "train":
            values[normalise(name)] = value
        elif section == "eval":
            values["val_" + normalise(name)] = value
        else:
            values[key] = value
    return values if "step" in values else None
