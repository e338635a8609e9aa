"""A journal cut under a reader and written past the reader's offset again before its next read
(a loaded machine: the follower reads late). The reader took the bytes at its old offset, the
middle of a later record, and skipped every record between; the tail's next push then started past
a gap that no re-tail would fill, and `metrics -f` waited forever for the job's end."""

from __future__ import annotations

import json
from pathlib import Path

from remote_agent.serving.tailhub import journal_push
from remote_agent.storage.journal import JournalReader, seq_of


def _line(seq: int, step: int) -> bytes:
    return json.dumps({"seq": seq, "t": 1.0, "kind": "metric", "values": {"step": step}}).encode() + b"\n"


def test_a_cut_journal_written_past_the_offset_again_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(_line(s, s) for s in range(1, 21)))
    reader = JournalReader(path)
    assert [r["seq"] for r in reader.read_new()] == list(range(1, 21))
    kept = b"".join(_line(s, s) for s in range(1, 6))
    # cut to 5 records; the writer goes on at 22 (21 was cut away) and writes past the old offset
    path.write_bytes(kept + b"".join(_line(s, s * 1000) for s in range(22, 60)))
    assert path.stat().st_size > reader.offset
    seqs = [r["seq"] for r in reader.read_new()]
    assert seqs == list(range(22, 60)), seqs  # before: from the middle of a record, 22.. skipped
    assert reader.cuts == 1


def test_a_read_that_ends_at_a_line_end_is_no_cut(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(_line(s, s) for s in range(1, 4)))
    reader = JournalReader(path)
    reader.read_new()
    with open(path, "ab") as f:
        f.write(b"not a record\n" + _line(4, 4))
    assert [r["seq"] for r in reader.read_new()] == [4] and reader.cuts == 0


def test_a_push_after_a_cut_accounts_for_the_seqs_the_cut_took() -> None:
    lines = [_line(s, s).rstrip(b"\n") for s in (22, 23)]
    header = json.loads(journal_push("j", "0", lines, after=19).split(b"\n", 1)[0])
    assert (header["first_seq"], header["last_seq"]) == (20, 23)  # 20 and 21 are gone, not owed
    plain = json.loads(journal_push("j", "0", lines).split(b"\n", 1)[0])
    assert plain["first_seq"] == seq_of(lines[0]) == 22
