"""`--replay FILE`: a recorded agent session played back as a Transport, with no agent and no network.

The client cannot tell it from an agent: it says the recorded hello, answers each request with the
recorded answer for the same op (polls such as `gpus`/`jobs` take the next one, holding the last, and
never one from before the replay's place on the recording's timeline),
serves `logs` from the output the recording saw, and pushes the recorded journal events at their
recorded pace (`speed` times faster; 0 = at once, as at the recording's end). Actions are refused with one line: a replay is
read-only, so a demo or a bug report can never start or stop anything.
"""

from __future__ import annotations

import base64
import heapq
import io
import itertools
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from remote_agent.serving.logindex import LogArgError, index_file, search_file
from remote_agent.serving.seriesfold import series_of_records
from remote_agent.storage.records import expand, expand_all
from remote_agent.supervision.outputcap import gap_marker

from .client import decode_object
from .recording import FORMAT
from .replay_refusal import READ_ONLY
from .transport import Transport

ACTIONS = frozenset({"launch", "stop", "kill", "restart", "rm", "autostop"})
Key = tuple[str, str]  # (job, node)


class ReplayError(Exception):
    """The file is not a usable recording; the message says why, in one line."""


@dataclass
class HostTape:
    """What one host's agent said in the recording, indexed for answering."""

    marker: dict[str, Any] | None = None
    hello: dict[str, Any] | None = None  # the first hello result, and when it came
    hello_t: float = 0.0
    first_t: float | None = None
    last_t: float = 0.0
    answers: dict[str, list[tuple[float, dict[str, Any]]]] = field(
        default_factory=dict
    )  # op -> (t, response)
    pushes: dict[Key, list[tuple[float, list[dict[str, Any]]]]] = field(default_factory=dict)
    last_seq: dict[Key, int] = field(default_factory=dict)
    logs: dict[Key, bytearray] = field(default_factory=dict)
    logs_done: dict[Key, bool] = field(default_factory=dict)
    logs_gap: dict[Key, list[int]] = field(default_factory=dict)  # what the output cap dropped, as last seen
    price: dict[str, Any] | None = None  # the last `price` the recorded client told this host's agent

    def host_time(self, t: float) -> float | None:
        """The host's clock at recording time t (from hello's `time`), or None if it never said."""
        ht = self.hello.get("time") if self.hello else None
        return ht + (t - self.hello_t) if isinstance(ht, int | float) else None


class Recording:
    def __init__(self, tapes: dict[str, HostTape], path: Path | None = None) -> None:
        self.tapes = tapes
        self.path = path
        # `local` first, then by name: the app's hosts connected in whatever order threads ran.
        self.hosts = sorted(tapes, key=lambda h: (h != "local", h))

    @classmethod
    def load(cls, path: str | Path) -> Recording:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ReplayError(f"cannot read recording {p}: {exc.strerror or exc}") from None
        return cls.parse(text.splitlines(), p)

    @classmethod
    def parse(cls, lines: list[str], path: Path | None = None) -> Recording:
        entries = [e for e in (decode_object(line) for line in lines) if e is not None]
        if not entries or entries[0].get("format") != FORMAT:
            raise ReplayError(
                f"{path or 'recording'}: not a gpudeck recording (make one with gpudeck --record FILE)"
            )
        tapes: dict[str, HostTape] = {}
        requests: dict[tuple[str, Any, Any], dict[str, Any]] = {}
        in_journal: dict[tuple[str, Any], Key] = {}  # (host, conn) → the job whose journal lines come now
        for e in entries[1:]:
            host, t = e.get("host"), e.get("t")
            if not isinstance(host, str) or not isinstance(t, int | float):
                continue
            tape = tapes.setdefault(host, HostTape())
            tape.first_t = t if tape.first_t is None else tape.first_t
            tape.last_t = max(tape.last_t, t)
            msg = e.get("msg")
            if not isinstance(msg, dict):
                continue
            if e.get("dir") == "send":
                requests[(host, e.get("conn"), msg.get("id"))] = msg
            elif e.get("dir") == "recv":
                conn = (host, e.get("conn"))
                if (
                    "push" not in msg
                    and "id" not in msg
                    and isinstance(msg.get("seq"), int)
                    and conn in in_journal
                ):
                    _take_journal_line(tape, t, in_journal[conn], msg)  # a line of a `journal` push's body
                    continue
                in_journal.pop(conn, None)
                if msg.get("push") == "journal":
                    in_journal[conn] = (str(msg.get("job")), str(msg.get("node")))
                    continue
                req = requests.pop((host, e.get("conn"), msg.get("id")), None) if "id" in msg else None
                _take(tape, t, msg, req)
        if not tapes:
            raise ReplayError(f"{path or 'recording'}: the recording holds no agent session")
        return cls(tapes, path)

    def transport(self, host: str, speed: float = 1.0) -> ReplayTransport:
        return ReplayTransport(self, host, speed)

    def host_settings(self, host: str) -> dict[str, Any]:
        """The host's price as the recorded client told its agent (the `price` op), in hosts.toml's
        keys: a replay prices its hosts as they were priced, not by this machine's hosts.toml."""
        price = self.tapes[host].price if host in self.tapes else None
        if not price or price.get("per_hour") is None:
            return {}
        return {"price_per_hour": price["per_hour"], "currency": price.get("currency") or "USD"}


def _take_journal_line(tape: HostTape, t: float, key: Key, record: dict[str, Any]) -> None:
    """A journal record that came as text: filed like a pushed event (one batch per moment)."""
    points = expand(record)  # a dense `points` line: filed as its metric records (one seq each)
    if not points:
        return
    batches = tape.pushes.setdefault(key, [])
    if batches and batches[-1][0] == t:
        batches[-1][1].extend(points)
    else:
        batches.append((t, points))


def _take(tape: HostTape, t: float, msg: dict[str, Any], req: dict[str, Any] | None) -> None:
    """File one agent line under what it answers."""
    if msg.get("gpudeck") == "agent":
        tape.marker = tape.marker or msg
        return
    if msg.get("push") == "events":
        key = (str(msg.get("job")), str(msg.get("node")))
        records = [
            r
            for r in expand_all(r for r in msg.get("events") or () if isinstance(r, dict))
            if isinstance(r.get("seq"), int)
        ]
        if records:
            tape.pushes.setdefault(key, []).append((t, records))
        return
    if req is None or not isinstance(req.get("op"), str):
        return  # heartbeats, answers to pings nobody waits for
    op, result = req["op"], msg.get("result")
    key = (str(req.get("job")), str(req.get("node")))
    if op == "price" and msg.get("ok"):
        tape.price = {k: req.get(k) for k in ("per_hour", "currency")}
    if op == "hello" and msg.get("ok") and tape.hello is None and isinstance(result, dict):
        tape.hello, tape.hello_t = result, t
    elif op == "tail" and isinstance(result, dict) and isinstance(result.get("last_seq"), int):
        tape.last_seq[key] = max(tape.last_seq.get(key, 0), result["last_seq"])
    elif op == "logs" and msg.get("ok") and isinstance(result, dict):
        _merge_logs(tape, key, result)
    tape.answers.setdefault(op, []).append((t, {k: v for k, v in msg.items() if k != "id"}))


def _merge_logs(tape: HostTape, key: Key, result: dict[str, Any]) -> None:
    # The output is one byte file read by offset: every chunk the recording saw goes in its place.
    try:
        data = base64.b64decode(result.get("data") or "")
        offset = int(result.get("offset", 0))
    except (ValueError, TypeError):
        return
    buf = tape.logs.setdefault(key, bytearray())
    if offset <= len(buf):
        buf[offset : offset + len(data)] = data
    tape.logs_done[key] = tape.logs_done.get(key, False) or bool(result.get("done"))
    gap = result.get("gap")
    if (
        isinstance(gap, list)
        and len(gap) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in gap)
    ):
        tape.logs_gap[key] = gap


class ReplayTransport(Transport):
    """One connection's worth of replay. Lines for the client wait in a heap by due time, so paced
    pushes need no thread of their own: readline() sleeps until the next one is due."""

    def __init__(
        self, recording: Recording, host: str, speed: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not (math.isfinite(speed) and speed >= 0):
            raise ValueError(f"replay speed must be a number >= 0, not {speed}")
        self.host = host
        self.tape = recording.tapes.get(host) or HostTape()
        self.speed = speed
        self._clock = clock
        self._opened = 0.0
        self._served: dict[str, int] = {}
        self._heap: list[tuple[float, int, Key | None, bytes]] = []
        self._order = itertools.count()
        self._cond = threading.Condition()
        self._closed = False

    # -- Transport -----------------------------------------------------------------------------

    def open(self) -> None:
        self._opened = self._clock()
        marker = dict(self.tape.marker or {"gpudeck": "agent", "version": "replay", "protocol": 1})
        self._queue(marker)

    def readline(self) -> bytes:
        with self._cond:
            while not self._closed:
                wait = None
                if self._heap:
                    wait = self._heap[0][0] - self._clock()
                    if wait <= 0:
                        return heapq.heappop(self._heap)[3]
                self._cond.wait(wait)
            return b""

    def write(self, data: bytes) -> None:
        for line in data.splitlines():
            req = decode_object(line.decode("utf-8", "replace"))
            if req is None:
                self._queue({"id": None, "ok": False, "error": "not a JSON object"})
            else:
                self._answer(req)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- for tests and the UI ------------------------------------------------------------------

    def exhausted(self, op: str) -> bool:
        """Every recorded answer to op has been served (polls now hold the last)."""
        return self._served.get(op, 0) >= len(self.tape.answers.get(op, ()))

    @property
    def pending(self) -> int:
        """Lines queued for the client and not read yet (paced pushes included)."""
        with self._cond:
            return len(self._heap)

    # -- answering -----------------------------------------------------------------------------

    def _answer(self, req: dict[str, Any]) -> None:
        rid, op = req.get("id"), req.get("op")
        key = (str(req.get("job")), str(req.get("node")))
        if not isinstance(op, str):
            self._queue({"id": rid, "ok": False, "error": "request without op"})
        elif op in ACTIONS:
            self._queue({"id": rid, "ok": False, "error": READ_ONLY.format(op=op)})
        elif op == "hello" and self.tape.hello is not None:
            self._ok(rid, {**self.tape.hello, "time": self._host_now(self.tape.hello.get("time"))})
        elif op == "ping":
            self._ok(rid, {"time": self._host_now(time.time())})
        elif op == "tail":
            asked = req.get("since_seq")
            since = asked if isinstance(asked, int) else 0
            pushed = [r["seq"] for _, recs in self.tape.pushes.get(key, ()) for r in recs]
            self._ok(rid, {"last_seq": max([self.tape.last_seq.get(key, since), *pushed])})
            self._schedule(key, since, req.get("text") is True)
        elif op == "untail":
            self._drop(key)
            self._ok(rid, {})
        elif op == "logs":
            self._ok(rid, self._logs(key, req))
        elif op in ("follow", "unfollow", "lines", "search"):
            self._output_op(rid, op, key, req)
        elif (
            op == "series"
        ):  # folded from the journal the recording saw up to where it stands, as the agent would
            now = self._position()
            seen = [
                r
                for t, recs in self.tape.pushes.get(key, ())
                if t <= now
                for r in recs
                if isinstance(r, dict)
            ]
            asked = req.get("width")
            width = asked if isinstance(asked, int) else 1000
            self._ok(
                rid,
                series_of_records(
                    sorted(seen, key=lambda r: r["seq"] if isinstance(r.get("seq"), int) else 0),
                    max(16, min(width, 4000)),
                ),
            )
        else:
            answers = self.tape.answers.get(op)
            if not answers:
                self._queue({"id": rid, "ok": False, "error": f"{op}: not in this recording"})
                return
            # The next answer, but none older than where the replay stands: polls keep step with
            # the paced events, and at speed 0 (the end) a one-shot CLI verb sees the final state.
            position = self._position()
            caught_up = sum(1 for t, _ in answers if t <= position) - 1
            i = max(self._served.get(op, 0), caught_up)
            self._served[op] = i + 1
            self._queue({**answers[min(i, len(answers) - 1)][1], "id": rid})

    def _ok(self, rid: Any, result: Any) -> None:
        self._queue({"id": rid, "ok": True, "result": result})

    def _position(self) -> float:
        """Where the replay is on the recording's timeline (0 = instantly: at its end)."""
        tape = self.tape
        start = tape.first_t or 0.0
        if self.speed == 0:
            return tape.last_t
        return min(tape.last_t, start + (self._clock() - self._opened) * self.speed)

    def _host_now(self, fallback: Any) -> Any:
        # The host's clock where the replay stands, so runtimes of recorded jobs read as they did.
        t = self.tape.host_time(self._position())
        return fallback if t is None else round(t, 3)

    def _logs(self, key: Key, req: dict[str, Any]) -> dict[str, Any]:
        buf = self.tape.logs.get(key, bytearray())
        offset = max(0, int(req.get("offset") or 0))
        limit = max(1, int(req.get("limit") or 1 << 20))
        chunk = bytes(buf[offset : offset + limit])
        gap = self.tape.logs_gap.get(key)
        if gap:  # as the agent answers: never the dropped bytes, and where to go on
            chunk = (
                chunk[: max(0, gap[0] - offset)] if offset < gap[0] else (chunk if offset >= gap[1] else b"")
            )
        return {
            "offset": offset,
            "data": base64.b64encode(chunk).decode("ascii"),
            "size": len(buf),
            "done": self.tape.logs_done.get(key, True),
            "gap": gap,
        }

    def _output_op(self, rid: Any, op: str, key: Key, req: dict[str, Any]) -> None:
        """follow (the recorded output at once, then its end if the job was over), unfollow, and the
        full log's lines/search over the recorded output, as the agent answers them."""
        buf = bytes(self.tape.logs.get(key, b""))
        gap = self.tape.logs_gap.get(key)
        done = self.tape.logs_done.get(key, True)
        try:
            if op == "lines":
                self._ok(
                    rid,
                    {
                        **index_file(
                            io.BytesIO(buf),
                            req.get("offset"),
                            req.get("line"),
                            req.get("step"),
                            req.get("max_bytes"),
                            gap,
                        ),
                        "done": done,
                    },
                )
            elif op == "search":
                self._ok(
                    rid,
                    search_file(
                        io.BytesIO(buf),
                        req.get("text"),
                        req.get("offset"),
                        req.get("line"),
                        req.get("backward", False),
                        req.get("max_bytes"),
                        gap,
                    ),
                )
            elif op == "unfollow":
                self._ok(rid, {"was_following": True})
            else:
                offset = max(0, int(req.get("offset") or 0))
                self._ok(rid, {"offset": offset})
                job, node = key
                at = offset
                while at < len(buf):
                    push: dict[str, Any] = {"push": "output", "job": job, "node": node, "offset": at}
                    if (
                        gap and gap[0] <= at < gap[1]
                    ):  # the cap's hole: one line saying so, as the agent pushes
                        push.update(
                            skip_to=gap[1], data=base64.b64encode(gap_marker(at, gap[1])).decode("ascii")
                        )
                        at = gap[1]
                    else:
                        stop = min(len(buf), at + (64 << 10), gap[0] if gap and at < gap[0] else len(buf))
                        push["data"] = base64.b64encode(buf[at:stop]).decode("ascii")
                        at = stop
                    self._queue(push)
                if done:
                    self._queue(
                        {
                            "push": "output_end",
                            "job": job,
                            "node": node,
                            "offset": len(buf),
                            "state": None,
                            "exit_code": None,
                            "signal": None,
                            "error": None,
                        }
                    )
        except LogArgError as exc:
            self._queue({"id": rid, "ok": False, "error": str(exc)})

    def _schedule(self, key: Key, since: int, as_text: bool = False) -> None:
        """Push the recorded events after `since`, each batch when its recorded moment comes
        (as_text: as `journal` pushes, a header line and the records' lines)."""
        self._drop(key)  # a new subscription replaces the old one's queued batches
        start = self.tape.first_t or 0.0
        sent = since
        for t, records in sorted(self.tape.pushes.get(key, ()), key=lambda p: p[0]):
            fresh = [r for r in records if r["seq"] > sent]  # sessions overlap: each seq once
            if not fresh:
                continue
            sent = fresh[-1]["seq"]
            due = self._opened + (t - start) / self.speed if self.speed else 0.0
            if as_text:
                self._queue_journal(key, fresh, due)
            else:
                self._queue({"push": "events", "job": key[0], "node": key[1], "events": fresh}, due, key)

    def _drop(self, key: Key) -> None:
        with self._cond:
            self._heap = [item for item in self._heap if item[2] != key]
            heapq.heapify(self._heap)

    def _queue_journal(self, key: Key, records: list[dict[str, Any]], due: float) -> None:
        # The header and its lines as one run of the heap (same moment, consecutive order), so
        # nothing queued meanwhile can land inside the push.
        body = [
            (json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8") for r in records
        ]
        header = {
            "push": "journal",
            "job": key[0],
            "node": key[1],
            "first_seq": records[0]["seq"],
            "last_seq": records[-1]["seq"],
            "bytes": sum(len(line) for line in body),
        }
        lines = [(json.dumps(header, separators=(",", ":")) + "\n").encode("utf-8"), *body]
        with self._cond:
            for line in lines:
                heapq.heappush(self._heap, (due, next(self._order), key, line))
            self._cond.notify_all()

    def _queue(self, obj: dict[str, Any], due: float = 0.0, key: Key | None = None) -> None:
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode("utf-8")
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._order), key, line))
            self._cond.notify_all()


class Replay:
    """`--replay FILE [--replay-speed X]` for a whole process: the hosts and a transport for each."""

    def __init__(self, path: str | Path, speed: float = 1.0) -> None:
        if not (math.isfinite(speed) and speed >= 0):
            raise ReplayError(f"--replay-speed must be a number >= 0 (0: instantly), not {speed}")
        self.recording = Recording.load(path)
        self.speed = speed
        self.hosts = self.recording.hosts

    def transport(self, host: str) -> ReplayTransport:
        return self.recording.transport(host, self.speed)
