"""A moto S3 server on 127.0.0.1 for `--data`: one per test session (its start costs ~0.3 s), reset for
each test, with fake keys (nothing real is ever signed) and boto3 pointed at it by AWS_ENDPOINT_URL,
as a user's MinIO or OSS would be. A test module imports `moto_s3_server_fixture, s3_fixture` and
asks for `s3`."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

REGION = "us-east-1"


@dataclass
class S3:
    url: str
    client: Any

    def bucket(self, name: str, objects: dict[str, bytes]) -> None:
        self.client.create_bucket(Bucket=name)
        for key, body in objects.items():
            self.put(name, key, body)

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.client.put_object(Bucket=bucket, Key=key, Body=body)


@pytest.fixture(scope="session", name="moto_s3_server")
def moto_s3_server_fixture() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(name="s3")
def s3_fixture(moto_s3_server: str, monkeypatch: pytest.MonkeyPatch) -> S3:
    """A clean store; boto3 (here and in a CLI subprocess) finds it and the fake keys in the env."""
    import boto3

    urllib.request.urlopen(
        urllib.request.Request(f"{moto_s3_server}/moto-api/reset", method="POST"), timeout=10
    ).read()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": moto_s3_server,
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    client = boto3.client("s3", region_name=REGION, endpoint_url=moto_s3_server)
    return S3(moto_s3_server, client)
