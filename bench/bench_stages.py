"""Where a metric event's CPU goes, stage by stage, in one process (no scheduling noise between
processes): the supervisor's reading (split + parse → entries) and its journal write, serve's
tail hub (journal → push lines), the client's reader (push lines → delivered records).

Each stage runs the real code over the same flood (`step=N loss=X`, as bench_agent.py prints) and
reports CPU µs per event (thread time; median of --rounds). `--against DIR` runs the same stages on
another tree (e.g. a `git archive` of main) in a child process, rounds interleaved, side by side.

    python bench/bench_stages.py [--lines 100000] [--rounds 5] [--against /tmp/main-tree]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHUNK = 65536
STAGES = ("split+parse", "journal", "supervisor", "serve", "client")


def flood(n: int) -> bytes:
    return "".join(f"step={i} loss={1.0 / i:.6f}\n" for i in range(1, n + 1)).encode()


def _chunks(data: bytes) -> list[bytes]:
    return [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]


def supervisor_stages(data: bytes, tmp: Path) -> tuple[float, float, float, int]:
    """(split+parse s, journal s, both together s, metric entries): the supervisor's reader thread."""
    from remote_agent.storage.journal import JournalWriter
    from remote_agent.storage.layout import JobFiles
    from remote_agent.supervision.lines import LineSplitter
    from remote_agent.supervision.supervisor import Supervisor

    files = JobFiles(tmp)
    sup = Supervisor(files, {"id": "j", "name": "bench", "argv": ["true"], "workdir": str(tmp)})
    chunks = _chunks(data)
    batches = []
    t0 = time.thread_time()
    splitter = LineSplitter()
    for chunk in chunks:
        batches.append(
            sup._entries_for(splitter.feed(chunk))
            if hasattr(sup, "_entries_for")
            else sup.resize_note.mark([e for e in map(sup._entry_for, splitter.feed(chunk)) if e is not None])
        )
    parse_s = time.thread_time() - t0
    journal = JournalWriter(tmp / "parsed-only.jsonl")
    t0 = time.thread_time()
    for batch in batches:
        journal.append_many(batch)
    journal_s = time.thread_time() - t0
    journal.close()
    # The whole reader path as the supervisor runs it (split, parse, journal), into files.journal.
    sup = Supervisor(files, {"id": "j", "name": "bench", "argv": ["true"], "workdir": str(tmp)})
    sup.journal = JournalWriter(files.journal)
    splitter = LineSplitter()
    t0 = time.thread_time()
    for chunk in chunks:
        sup._journal_lines(splitter.feed(chunk))
    both_s = time.thread_time() - t0
    sup.journal.close()
    return parse_s, journal_s, both_s, sum(len(b) for b in batches)


class _Sink(io.RawIOBase):
    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:  # type: ignore[override]
        self.lines.append(bytes(b))
        return len(b)


def serve_stage(journal: Path, last_seq: int) -> tuple[float, list[bytes]]:
    """CPU s of serve's tail hub pushing the whole journal as `events` pushes (this process's CPU:
    the main thread only polls); the push lines."""
    from remote_agent.serving.output import LineWriter
    from remote_agent.serving.tailhub import TailHub

    sink = _Sink()
    t0 = time.process_time()
    hub = TailHub(LineWriter(sink))  # type: ignore[arg-type]
    hub.subscribe("j", "0", journal, 0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (sink.lines and _last_seq_in(sink.lines[-1]) >= last_seq):
        time.sleep(0.005)
    cpu = time.process_time() - t0
    hub.close()
    return cpu, sink.lines


def _last_seq_in(push: bytes) -> int:
    at = push.rfind(b'{"seq":')
    return int(push[at + 7 : push.index(b",", at)]) if at >= 0 else 0


def client_stage(pushes: list[bytes]) -> tuple[float, int]:
    """CPU s of the client's reader thread decoding and delivering the pushes; records delivered."""
    from tui.remote.client import AgentClient
    from tui.remote.transport import Transport

    class Replay(Transport):
        host = "bench"

        def __init__(self) -> None:
            self.lines = iter([b'{"gpudeck":"agent","protocol":1}\n'] + list(pushes))

        def open(self) -> None:
            pass

        def readline(self) -> bytes:
            return next(self.lines, b"")

        def write(self, data: bytes) -> None:
            pass

        def close(self) -> None:
            pass

    got = [0]
    t0 = time.process_time()
    client = AgentClient(Replay(), on_events=lambda job, node, recs: got.__setitem__(0, got[0] + len(recs)))
    client.connect()
    client._reader.join(60)  # type: ignore[union-attr]
    return time.process_time() - t0, got[0]


def one_round(n: int) -> dict[str, float]:
    data = flood(n)
    with tempfile.TemporaryDirectory() as tmp:
        parse_s, journal_s, both_s, entries = supervisor_stages(data, Path(tmp))
        assert entries == n, f"{entries} metric entries from {n} lines"
        serve_s, pushes = serve_stage(Path(tmp) / "events.jsonl", n)
    client_s, got = client_stage(pushes)
    assert got == n, f"client got {got} of {n}"
    us = 1e6 / n
    return {
        "split+parse": parse_s * us,
        "journal": journal_s * us,
        "supervisor": both_s * us,
        "serve": serve_s * us,
        "client": client_s * us,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--against", help="another source tree to measure the same way, rounds interleaved")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # child: one round, JSON out
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_round(args.lines)))
        return
    here = str(Path(__file__).resolve().parent.parent)
    trees = {"this tree": here} | ({"against": args.against} if args.against else {})
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, root in trees.items():
            out = subprocess.run(
                [sys.executable, __file__, "--one", "--lines", str(args.lines)],
                check=True,
                capture_output=True,
                text=True,
                cwd=root,
                env={"PYTHONPATH": root, "PATH": "/usr/bin:/bin"},
            )
            rows[name].append(json.loads(out.stdout))
    print(f"CPU µs per metric event, {args.lines} lines `step=N loss=X`, median of {args.rounds} rounds:")
    print(f"{'stage':14}" + "".join(f"{name:>14}" for name in trees) + ("   ratio" if args.against else ""))
    for stage in STAGES:
        meds = [statistics.median(r[stage] for r in rows[name]) for name in trees]
        ratio = f"{meds[0] / meds[1]:8.2f}" if args.against and meds[1] else ""
        print(f"{stage:14}" + "".join(f"{m:14.2f}" for m in meds) + ratio)


if __name__ == "__main__":
    main()
