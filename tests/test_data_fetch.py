"""The agent's object download against a moto S3 server: a cut download resumes with a Range request
from the byte it reached, bytes that do not match the ETag's MD5 are refused (and not kept to be
resumed), a multipart ETag is checked by size; and the `--data` argument's usage lines."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from remote_agent.datafetch.download import DownloadError, fetch_object, md5_of_etag
from tests.support.s3 import S3, moto_s3_server_fixture, s3_fixture  # noqa: F401 - fixtures
from tui.data.args import parse_data
from tui.errors import EXIT_USAGE, GpudeckError

BODY = os.urandom(3 << 20)


def presigned(s3: S3, key: str) -> str:
    return str(s3.client.generate_presigned_url("get_object", Params={"Bucket": "bkt", "Key": key}))


def test_a_cut_download_resumes_from_the_byte_it_reached(s3: S3, tmp_path: Path) -> None:
    s3.bucket("bkt", {"big": BODY})
    final = tmp_path / "obj"
    (tmp_path / "obj.part").write_bytes(BODY[: 2 << 20])  # what an earlier try left
    read: list[int] = []
    etag = hashlib.md5(BODY).hexdigest()
    assert fetch_object(presigned(s3, "big"), final, len(BODY), etag, threading.Event(), read.append)
    assert final.read_bytes() == BODY and sum(read) == len(BODY) - (2 << 20)
    assert final.stat().st_mode & 0o777 == 0o444 and not (tmp_path / "obj.part").exists()
    # in place: nothing is read again
    assert not fetch_object(presigned(s3, "big"), final, len(BODY), etag, threading.Event(), read.append)


def test_bytes_that_do_not_match_the_etag_are_refused(s3: S3, tmp_path: Path) -> None:
    s3.bucket("bkt", {"big": BODY})
    final = tmp_path / "obj"
    (tmp_path / "obj.part").write_bytes(b"\0" * 1000)  # a corrupt prefix: resumed, then caught by the MD5
    with pytest.raises(DownloadError, match="do not match its ETag's MD5"):
        fetch_object(
            presigned(s3, "big"),
            final,
            len(BODY),
            hashlib.md5(BODY).hexdigest(),
            threading.Event(),
            lambda n: None,
        )
    assert not final.exists() and (tmp_path / "obj.part").stat().st_size == 0  # not resumed next time
    # a multipart ETag promises no MD5 of the bytes: size only, so the same bytes pass
    assert md5_of_etag('"9b2cf535f27731c974343645a3985328-4"') is None
    assert fetch_object(
        presigned(s3, "big"),
        final,
        len(BODY),
        "9b2cf535f27731c974343645a3985328-4",
        threading.Event(),
        lambda n: None,
    )
    assert final.read_bytes() == BODY


def test_a_size_other_than_listed_is_refused(s3: S3, tmp_path: Path) -> None:
    s3.bucket("bkt", {"small": b"12345"})
    with pytest.raises(DownloadError, match="got 5 bytes, the listing said 6"):
        fetch_object(presigned(s3, "small"), tmp_path / "o", 6, "", threading.Event(), lambda n: None)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("bkt/ds:data", "not an s3:// URL"),
        ("s3://bkt/ds", "no :PATH"),
        ("s3://bkt/ds:", "PATH '' is not a usable path"),
        ("s3://bkt/ds:../up", "PATH '../up' is not a usable path"),
        ("s3://B!/ds:data", "'B!' is not a bucket name"),
    ],
)
def test_a_bad_data_argument_is_one_usage_line(text: str, why: str) -> None:
    with pytest.raises(GpudeckError) as bad:
        parse_data(text)
    assert bad.value.code == EXIT_USAGE
    assert (
        str(bad.value)
        == f"--data {text!r}: {why}; expected s3://BUCKET[/PREFIX]:PATH[:mount] (PATH: in the job's working directory, or absolute)"
    )


def test_the_data_argument_parts() -> None:
    arg = parse_data("s3://bkt/a/b/:/abs/data:mount")
    assert (arg.url, arg.list_prefix, arg.path, arg.mode) == ("s3://bkt/a/b", "a/b/", "/abs/data", "mount")
    assert parse_data("s3://bkt:data").list_prefix == ""
