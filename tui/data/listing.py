"""The client's half of `--data`: each source listed with boto3 (a paginator) and a presigned GET URL
made for each object, expiring after 6 h (GPUDECK_DATA_URL_EXPIRES seconds to change it).

The store: boto3's own chain for credentials and region; the endpoint from config.toml's
`[cloud] aws_endpoint_url`, else boto3's AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL (one setting for
`gpudeck cloud` and for data: OSS's S3 endpoint and MinIO are reached the same way)."""

from __future__ import annotations

import os
from typing import Any

from remote_agent.spec import DataObject, DataSource

from ..errors import EXIT_USAGE, GpudeckError
from ..settings import CloudSettings, load_or_default
from .args import DataArg

DEFAULT_EXPIRES = 6 * 3600
EXPIRES_VAR = "GPUDECK_DATA_URL_EXPIRES"

Urls = dict[str, str]  # key -> presigned URL


def url_expiry() -> int:
    raw = os.environ.get(EXPIRES_VAR, "")
    if not raw:
        return DEFAULT_EXPIRES
    if not raw.isdigit() or not 60 <= int(raw) <= 7 * 24 * 3600:
        raise GpudeckError(f"{EXPIRES_VAR}={raw!r}: seconds from 60 to 604800 (a week)", EXIT_USAGE)
    return int(raw)


class S3Lister:
    """One boto3 client for a launch (boto3 costs ~0.3 s a client); a client per bucket region."""

    def __init__(self, cloud: CloudSettings | None = None) -> None:
        if cloud is None:
            cloud = load_or_default()[0].cloud
        self.endpoint_url = cloud.aws_endpoint_url
        self.profile = cloud.aws_profile
        self._clients: dict[str | None, Any] = {}

    def client(self, region: str | None = None) -> Any:
        if region not in self._clients:
            import boto3
            from botocore.config import Config

            try:
                session = boto3.session.Session(profile_name=self.profile)
            except Exception as exc:  # botocore's ProfileNotFound and kin
                raise GpudeckError(f"--data: {exc}") from None
            self._clients[region] = session.client(
                "s3",
                region_name=region or session.region_name or "us-east-1",
                endpoint_url=self.endpoint_url,
                config=Config(signature_version="s3v4", retries={"max_attempts": 3, "mode": "standard"}),
            )
        return self._clients[region]

    def endpoint(self) -> str | None:
        """The endpoint the store was reached at when not AWS's own (a mount needs it)."""
        url = str(self.client().meta.endpoint_url)
        return None if url.endswith(".amazonaws.com") else url

    def list(self, arg: DataArg) -> tuple[DataSource, Urls]:
        """The source with its objects, and a URL per object; one line naming the cause on failure."""
        if arg.mode == "mount":  # the host mounts it with its own credentials: nothing to list here
            return DataSource(url=arg.url, path=arg.path, mode="mount", endpoint_url=self.endpoint()), {}
        objects: list[DataObject] = []
        region: str | None = None
        try:
            pages = (
                self.client()
                .get_paginator("list_objects_v2")
                .paginate(Bucket=arg.bucket, Prefix=arg.list_prefix)
            )
            for page in pages:
                headers = page.get("ResponseMetadata", {}).get("HTTPHeaders", {})
                region = region or headers.get("x-amz-bucket-region")
                objects.extend(
                    DataObject(o["Key"], int(o["Size"]), str(o.get("ETag", "")).strip('"'))
                    for o in page.get("Contents", [])
                    if not (o["Key"].endswith("/") and int(o["Size"]) == 0)
                )
        except Exception as exc:
            raise GpudeckError(f"--data {arg.url}: {describe(exc, arg)}") from None
        if not objects:
            raise GpudeckError(f"--data {arg.url}: no objects under that prefix", EXIT_USAGE)
        presigner = (
            self.client(region) if region and region != self.client().meta.region_name else self.client()
        )
        expires = url_expiry()
        urls = {
            o.key: str(
                presigner.generate_presigned_url(
                    "get_object", Params={"Bucket": arg.bucket, "Key": o.key}, ExpiresIn=expires
                )
            )
            for o in objects
        }
        source = DataSource(
            url=arg.url, path=arg.path, mode="copy", objects=tuple(objects), endpoint_url=self.endpoint()
        )
        return source, urls


def describe(exc: Exception, arg: DataArg) -> str:
    """boto3's failures in one line: the store's own code where it gave one."""
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        code = str(error.get("Code", ""))
        if code == "NoSuchBucket":
            return f"no such bucket {arg.bucket!r}"
        if code in ("AccessDenied", "403", "AllAccessDisabled"):
            return f"access denied listing {arg.url} (check the credentials boto3 finds on this machine)"
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return f"the store refused this machine's credentials ({code})"
        return f"{code or 'error'}: {error.get('Message') or exc}"
    name = type(exc).__name__
    if name == "NoCredentialsError":
        return "no credentials on this machine (boto3's chain: AWS_ACCESS_KEY_ID…, ~/.aws, a profile)"
    if name in ("EndpointConnectionError", "ConnectTimeoutError"):
        return f"cannot reach the store: {exc}"
    return f"{name}: {exc}"
