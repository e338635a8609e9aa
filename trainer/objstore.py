"""Checkpoints in object storage (`--checkpoint-uri s3://bucket/prefix`), S3 or S3-compatible (OSS...).

The local atomic write always comes first; uploads run on a background thread so a stop never
waits on the network beyond a bounded wait at exit, and a fresh machine downloads the newest one.
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlparse

from .checkpoint import NAME


class S3Store:
    def __init__(self, uri: str, endpoint: str | None, addressing: str) -> None:
        u = urlparse(uri)
        if u.scheme != "s3" or not u.netloc:
            raise SystemExit(f"--checkpoint-uri must look like s3://bucket/prefix, not {uri!r}")
        self.uri, self.bucket = uri.rstrip("/"), u.netloc
        self.prefix = u.path.strip("/") + "/" if u.path.strip("/") else ""
        try:
            import boto3  # only runs that use object storage need it
            from botocore.config import Config
        except ImportError:
            raise SystemExit("trainer: --checkpoint-uri needs boto3: pip install boto3") from None

        # The standard credential chain (env, profile, instance role); endpoint/addressing for non-AWS stores.
        cfg = Config(s3={"addressing_style": addressing}, retries={"max_attempts": 5, "mode": "standard"})
        self.client = boto3.client("s3", endpoint_url=endpoint, config=cfg)

    @contextlib.contextmanager
    def user_errors(self) -> Iterator[None]:
        """Errors of the store (unreachable endpoint, missing bucket, no credentials, access denied)
        end the run with one line naming the URI, not a 30-line traceback."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (BotoCoreError, ClientError) as e:
            reason = " ".join(str(e).split())[:300]
            raise SystemExit(f"trainer: --checkpoint-uri {self.uri}: {reason}") from None

    def upload(self, path: str) -> str:
        key = self.prefix + os.path.basename(path)
        self.client.upload_file(path, self.bucket, key)
        return f"s3://{self.bucket}/{key}"

    def newest(self) -> tuple[int, str] | None:
        """(step, key) of the newest checkpoint under the prefix."""
        best: tuple[int, str] | None = None
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        ):
            for obj in page.get("Contents", []):
                m = NAME.match(obj["Key"][len(self.prefix) :])
                if m and (best is None or int(m.group(1)) > best[0]):
                    best = (int(m.group(1)), obj["Key"])
        return best

    def download(self, key: str, directory: str) -> str:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pt", dir=directory)
        os.close(fd)
        try:
            self.client.download_file(self.bucket, key, tmp)
            path = os.path.join(directory, os.path.basename(key))
            os.replace(tmp, path)  # only a complete download gets a checkpoint's name
            return path
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


class Uploader:
    """One background thread uploading checkpoint files in order; `drain` waits a bounded time."""

    def __init__(self, store: S3Store, report: Callable[..., Any]) -> None:
        self.store, self.report = store, report
        self.todo: queue.Queue[str | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="checkpoint-upload", daemon=True)
        self.thread.start()

    def submit(self, path: str) -> None:
        self.todo.put(path)

    def _run(self) -> None:
        while (path := self.todo.get()) is not None:
            try:
                uri = self.store.upload(path)
                self.report("checkpoint_uploaded", path=path, uri=uri)
            except Exception as e:  # a failed upload must not stop training; the local file stays
                self.report("checkpoint_upload_failed", path=path, error=f"{type(e).__name__}: {e}")

    def drain(self, timeout: float) -> bool:
        """Finish queued uploads within `timeout` seconds; False if some are still in flight."""
        self.todo.put(None)
        self.thread.join(timeout)
        return not self.thread.is_alive()
