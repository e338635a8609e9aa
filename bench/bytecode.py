"""Benches run gpudeck as an installed package runs: with its bytecode cached.

Where the environment sets PYTHONDONTWRITEBYTECODE (this machine's does), every command compiles
each module it imports from source, ~150 ms of a CLI command that a pip-installed gpudeck never
pays. `cache_bytecode` lets the commands a bench starts write and reuse .pyc files under a private
folder (PYTHONPYCACHEPREFIX), so the checkout itself stays untouched.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_bytecode(folder: Path) -> str:
    """Set the environment for what this process starts; returns the line a bench prints."""
    was = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
    return f"bytecode cached under {folder}" + (
        " (PYTHONDONTWRITEBYTECODE was set; unset for the runs)" if was else ""
    )
