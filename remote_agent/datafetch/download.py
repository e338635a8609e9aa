"""One object from its presigned URL into the cache: to a `.part` file (resumed with an HTTP Range
after a cut, a stop or a restart), verified, then renamed into place read-only. Two jobs (or two
nodes of one job on one host) wanting the same object take turns on the part file's lock: the second
finds the object in place and reads nothing."""

from __future__ import annotations

import fcntl
import hashlib
import http.client
import os
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Optional

CHUNK = 1 << 20
TIMEOUT = 60.0
TRIES = 4  # a 5xx, a reset or a timeout is tried again from the byte it reached
_MD5 = re.compile(r"[0-9a-f]{32}")


class DownloadError(Exception):
    """One line naming what the store answered (never the URL: it is a bearer token)."""


class Stopped(Exception):
    """Another object failed: this one gave up where it was (its part file stays, resumable)."""


def md5_of_etag(etag: str) -> Optional[str]:
    """The MD5 an ETag promises, or None. A single-part upload's ETag is the MD5 of its bytes; a
    multipart one's (`<hex>-<parts>`) is the MD5 of the parts' MD5s, which needs the part size to
    check: such objects (and stores whose ETags are no MD5 at all) are verified by size only."""
    value = etag.strip().strip('"').lower()
    return value if _MD5.fullmatch(value) else None


def fetch_object(
    url: str,
    final: Path,
    size: int,
    etag: str,
    stop: threading.Event,
    on_bytes: Callable[[int], None],
) -> bool:
    """Make `final` hold the object; True when bytes were read, False when it was already there."""
    if final.exists():
        return False
    part = final.with_name(final.name + ".part")
    fd = os.open(str(part), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if final.exists():  # someone else finished it while we waited for the lock
            _drop_if_empty(part, fd)
            return False
        _download(url, fd, size, md5_of_etag(etag), stop, on_bytes)
        os.fchmod(fd, 0o444)
        os.replace(str(part), str(final))
        return True
    finally:
        os.close(fd)


def _drop_if_empty(part: Path, fd: int) -> None:
    try:
        st = os.fstat(fd)
        if st.st_size == 0 and os.stat(str(part)).st_ino == st.st_ino:
            os.unlink(str(part))
    except OSError:
        pass


def _download(
    url: str,
    fd: int,
    size: int,
    md5: Optional[str],
    stop: threading.Event,
    on_bytes: Callable[[int], None],
) -> None:
    have = os.fstat(fd).st_size
    if have > size:
        os.ftruncate(fd, 0)
        have = 0
    digest = _hash_prefix(fd, have) if md5 else None
    for attempt in range(TRIES):
        if have >= size:
            break
        try:
            have, digest = _get(url, fd, have, digest, stop, on_bytes)
            break  # the whole answer came: its size is checked below
        except _Retry as exc:
            if attempt == TRIES - 1:
                raise DownloadError(str(exc)) from None
            time.sleep(0.2 * (2**attempt))
    if have != size:
        raise DownloadError("got %d bytes, the listing said %d (changed since it was listed?)" % (have, size))
    if md5 and digest is not None and digest.hexdigest() != md5:
        os.ftruncate(fd, 0)  # wrong bytes are not resumed
        raise DownloadError("its bytes do not match its ETag's MD5 (changed since it was listed?)")


class _Retry(Exception):
    pass


def _get(
    url: str,
    fd: int,
    have: int,
    digest: Optional[hashlib._Hash],
    stop: threading.Event,
    on_bytes: Callable[[int], None],
) -> tuple[int, Optional[hashlib._Hash]]:
    request = urllib.request.Request(url, headers={"Range": "bytes=%d-" % have} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        cause = describe_http_error(exc.code, _body(exc))
        if exc.code >= 500 or exc.code == 429:
            raise _Retry(cause) from None
        raise DownloadError(cause) from None
    except (urllib.error.URLError, socket.timeout, ConnectionError) as exc:  # noqa: UP041 - 3.8: not TimeoutError
        raise _Retry("the store did not answer: %s" % getattr(exc, "reason", exc)) from None
    with response:
        if have and response.status != 206:  # the store ignored the range: from the start
            os.ftruncate(fd, 0)
            have = 0
            digest = hashlib.md5() if digest is not None else None
        os.lseek(fd, have, os.SEEK_SET)
        try:
            while True:
                if stop.is_set():
                    raise Stopped()
                chunk = response.read(CHUNK)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view) :]
                if digest is not None:
                    digest.update(chunk)
                have += len(chunk)
                on_bytes(len(chunk))
        except (socket.timeout, ConnectionError, http.client.HTTPException) as exc:  # noqa: UP041 - 3.8: not TimeoutError
            raise _Retry("the download was cut: %s" % exc) from None
    return have, digest


def _hash_prefix(fd: int, length: int) -> hashlib._Hash:
    digest = hashlib.md5()
    os.lseek(fd, 0, os.SEEK_SET)
    left = length
    while left > 0:
        chunk = os.read(fd, min(CHUNK, left))
        if not chunk:
            break
        digest.update(chunk)
        left -= len(chunk)
    return digest


def _body(exc: urllib.error.HTTPError) -> str:
    try:
        return exc.read(4096).decode("utf-8", "replace")
    except Exception:
        return ""


_WORDS = {403: "denied", 404: "missing", 400: "refused", 416: "changed since it was listed"}


def describe_http_error(status: int, body: str) -> str:
    """`HTTP 403 denied (AccessDenied: Request has expired)` from the store's XML error, if any."""
    code = re.search(r"<Code>([^<]{1,100})</Code>", body)
    message = re.search(r"<Message>([^<]{1,200})</Message>", body)
    detail = ": ".join(m.group(1).strip() for m in (code, message) if m)
    words = _WORDS.get(status, "error")
    if code and code.group(1) in ("ExpiredToken", "TokenRefreshRequired") or "expired" in detail.lower():
        words = "expired URL"
    return "HTTP %d %s%s" % (status, words, " (%s)" % detail if detail else "")
