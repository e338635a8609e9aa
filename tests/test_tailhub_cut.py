"""The agent's tail after a journal cut: its next `events` push says `after` (the last seq it sent),
so a client takes the records past the seqs the cut took instead of waiting for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from remote_agent.serving.tailhub import TailHub
from tests.support.waiting import wait_for


class Out:
    def __init__(self) -> None:
        self.pushes: list[dict[str, Any]] = []

    def send_raw(self, data: bytes) -> None:
        self.pushes.append(json.loads(data))

    def send(self, obj: dict[str, Any]) -> None:
        self.pushes.append(obj)


def _lines(*seqs: int, scale: int = 1) -> bytes:
    return b"".join(
        json.dumps({"seq": s, "t": 1.0, "kind": "metric", "values": {"step": s * scale}}).encode() + b"\n"
        for s in seqs
    )


def test_the_push_after_a_cut_says_which_seq_it_follows(tmp_path: Path) -> None:
    journal = tmp_path / "events.jsonl"
    journal.write_bytes(_lines(1, 2, 3))
    out = Out()
    hub = TailHub(out)  # type: ignore[arg-type]
    try:
        hub.subscribe("j", "0", journal, 0)
        wait_for(lambda: any(p.get("events") for p in out.pushes), what="the first push")
        assert [(p["after"], [e["seq"] for e in p["events"]]) for p in out.pushes] == [(0, [1, 2, 3])]
        journal.write_bytes(_lines(1) + _lines(*range(6, 30), scale=1000))  # cut, written past the old offset
        seqs = lambda: [e["seq"] for p in out.pushes[1:] for e in p["events"]]  # noqa: E731
        wait_for(lambda: seqs()[-1:] == [29], what="the pushes after the cut")
        assert out.pushes[1]["after"] == 3 and seqs() == list(range(6, 30))  # before: no `after`
    finally:
        hub.close()
