"""The one JSON object an acting verb answers with under --json (run, watch, scale, stop, kill, rm,
restart, autostop): each verb's fields are listed in the README; unknowns are null, never left out."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_json(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"answer with one JSON object: {what}")


def launched(launched: Any) -> dict[str, Any]:
    """run / watch / restart: the new job."""
    hosts = list(launched.hosts) or [launched.host]
    return {"id": launched.id, "name": launched.name, "state": launched.state, "hosts": hosts}


def say(as_json: bool, obj: dict[str, Any], text: str) -> None:
    """The verb's answer on stdout: the object under --json, else the line people read."""
    print(json.dumps(obj, indent=2) if as_json else text)
