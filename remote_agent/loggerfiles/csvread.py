"""Lightning's CSVLogger `metrics.csv` read as it grows. Lightning appends rows at each flush and
rewrites the whole file (a new header) when a new metric appears: a header that changed, or a file
shorter than what was read, is read again from the top, its first `rows` data rows already given.
Only whole lines are read (a flush may be caught half written)."""

from __future__ import annotations

import csv
import os
from typing import Any, Dict, List, Optional

MAX_READ = 8 << 20  # bytes per poll: a huge file is caught up over several polls


class CsvMetricsReader:
    def __init__(self, path: str, offset: int = 0, rows: int = 0, header: str = "") -> None:
        self.path = path
        self.offset = offset  # bytes of whole lines read
        self.rows = rows  # data rows given so far
        self.header = header  # the header line those rows were read under

    def state(self) -> Dict[str, Any]:
        return {"offset": self.offset, "rows": self.rows, "header": self.header}

    def poll(self) -> List[Dict[str, Any]]:
        """The rows written since the last poll, each as {column: text}."""
        try:
            with open(self.path, "rb") as f:
                head = f.readline(65536)
                if not head.endswith(b"\n"):
                    return []
                header = head.decode("utf-8", "replace").rstrip("\r\n")
                skip = 0
                if header != self.header or os.fstat(f.fileno()).st_size < self.offset:
                    skip, self.header, self.offset = self.rows, header, len(head)  # rewritten
                f.seek(self.offset)
                data = f.read(MAX_READ)
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        if end == 0:
            return []
        self.offset += end
        names = next(csv.reader([self.header]))
        rows: List[Dict[str, Any]] = []
        for cells in csv.reader(data[:end].decode("utf-8", "replace").splitlines()):
            if skip > 0:
                skip -= 1
                continue
            self.rows += 1
            rows.append({names[i]: v for i, v in enumerate(cells[: len(names)]) if v != ""})
        return rows


def number(text: Optional[str]) -> Optional[float]:
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and value == value and abs(value) != float("inf") else None
