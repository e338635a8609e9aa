"""`s3://BUCKET[/PREFIX]:PATH[:mount]`, parsed without IO: one usage line naming the value on error."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import EXIT_USAGE, GpudeckError

FORM = "s3://BUCKET[/PREFIX]:PATH[:mount] (PATH: in the job's working directory, or absolute)"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.\-_]{1,62}")


@dataclass(frozen=True)
class DataArg:
    bucket: str
    prefix: str  # no leading or trailing `/`; "" for the whole bucket
    path: str
    mode: str  # "copy" | "mount"
    text: str  # as the user wrote it, for messages

    @property
    def url(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"

    @property
    def list_prefix(self) -> str:
        """What is listed: the prefix as a directory (`a/b` lists `a/b/…`, never `a/bc`)."""
        return f"{self.prefix}/" if self.prefix else ""


def parse_data(text: str, label: str = "--data") -> DataArg:
    def bad(why: str) -> GpudeckError:
        return GpudeckError(f"{label} {text!r}: {why}; expected {FORM}", EXIT_USAGE)

    if not isinstance(text, str) or not text.startswith("s3://"):
        raise bad("not an s3:// URL")
    rest, mode = text, "copy"
    if rest.endswith(":mount"):
        rest, mode = rest[: -len(":mount")], "mount"
    url, sep, path = rest[len("s3://") :].rpartition(":")
    if not sep or not url:
        raise bad("no :PATH")
    if not path.strip() or "\0" in path or any(p == ".." for p in path.split("/")):
        raise bad(f"PATH {path!r} is not a usable path")
    bucket, _, prefix = url.partition("/")
    if not _BUCKET.fullmatch(bucket):
        raise bad(f"{bucket!r} is not a bucket name")
    return DataArg(bucket=bucket, prefix=prefix.strip("/"), path=path, mode=mode, text=text)
