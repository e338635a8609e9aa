"""Counting what the code under test calls, without changing what it does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def record_calls(
    monkeypatch: pytest.MonkeyPatch, owner: object, name: str, note: Callable[..., Any] = lambda *args: args
) -> list[Any]:
    """owner.name calls through as before, and each call's note(*args) goes into the list returned."""
    calls: list[Any] = []
    real = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(note(*args))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls
