"""One look at a cloud provider's interruption notice, from the instance metadata service.

AWS (IMDSv2): PUT /latest/api/token (header X-aws-ec2-metadata-token-ttl-seconds), then
GET /latest/meta-data/spot/instance-action with X-aws-ec2-metadata-token: 404 = no notice,
200 = {"action": "terminate"|"stop"|"hibernate", "time": "2026-12-05T22:30:00Z"}.
Aliyun: GET /latest/meta-data/instance/spot/termination-time: 404 = none, 200 = an ISO time.

The endpoint: the host's `metadata_endpoint` (hosts.toml, sent in the spec's `notice`), else for AWS
what botocore reads (AWS_EC2_METADATA_SERVICE_ENDPOINT, or the IPv6 address when
AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv6), else the provider's link-local address.
Never through a proxy, short timeouts. Standard library only (the agent's rule).
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Dict, Mapping, Optional, Tuple

PROVIDERS = ("aws", "aliyun")
AWS_ENDPOINT = "http://169.254.169.254/"
AWS_ENDPOINT_V6 = "http://[fd00:ec2::254]/"
ALIYUN_ENDPOINT = "http://100.100.100.200/"
TIMEOUT = 1.0  # seconds per request: a link-local service answers in milliseconds or not at all
TOKEN_TTL = 21600  # seconds an IMDSv2 token lives (the most AWS allows)
TOKEN_RENEW = 60.0  # a token is renewed this long before it expires
MAX_BODY = 4096
ISO_RE = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d+)?(Z|[+-]\d\d:?\d\d)?$")

_opener: Any = None  # built at the first request: an idle supervisor off the cloud never loads urllib


class NoticeError(Exception):
    """The endpoint answered something that is not a notice nor its absence (one line, for the journal)."""


def endpoint(provider: str, setting: Optional[str], environ: Mapping[str, str]) -> str:
    if setting:
        return setting.rstrip("/") + "/"
    if provider == "aws":
        env = environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT")
        if env:
            return env.rstrip("/") + "/"
        if environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "").lower() == "ipv6":
            return AWS_ENDPOINT_V6
        return AWS_ENDPOINT
    return ALIYUN_ENDPOINT


def request(url: str, method: str = "GET", headers: Optional[Dict[str, str]] = None) -> Tuple[int, bytes]:
    """(status, body); an HTTP error status is an answer, a network failure raises OSError."""
    global _opener
    import urllib.error
    import urllib.request

    if _opener is None:
        _opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # metadata is never proxied
    req = urllib.request.Request(
        url, method=method, headers=headers or {}, data=b"" if method == "PUT" else None
    )
    try:
        with _opener.open(req, timeout=TIMEOUT) as resp:
            return int(resp.status), resp.read(MAX_BODY)
    except urllib.error.HTTPError as exc:
        return int(exc.code), b""


def parse_time(text: Any) -> float:
    """Epoch seconds of the provider's ISO 8601 UTC time (offsets honoured)."""
    m = ISO_RE.match(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise NoticeError("notice time is not an ISO 8601 time: %r" % (str(text)[:60],))
    parts = [int(m.group(i)) for i in range(1, 7)]
    import calendar  # here: it loads datetime, which an idle supervisor never needs

    try:
        at = float(calendar.timegm((parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, 0)))
    except (ValueError, OverflowError):
        raise NoticeError("notice time out of range: %r" % (text[:60],)) from None
    zone = m.group(7)
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        digits = zone[1:].replace(":", "")
        at -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return at


class MetadataWatch:
    """Asks one provider's endpoint whether a notice is out; keeps the AWS token between looks."""

    def __init__(self, provider: str, base: str) -> None:
        if provider not in PROVIDERS:
            raise ValueError("no interruption notice is known for provider %r" % provider)
        self.provider = provider
        self.base = base
        self._token: Optional[str] = None
        self._token_until = 0.0

    def look(self) -> Optional[Dict[str, Any]]:
        """None: no notice now; else {provider, action, time, at}. Raises NoticeError or OSError."""
        if self.provider == "aws":
            return self._aws()
        return self._aliyun()

    def _aws(self) -> Optional[Dict[str, Any]]:
        token = self._aws_token()
        status, body = request(
            self.base + "latest/meta-data/spot/instance-action", headers={"X-aws-ec2-metadata-token": token}
        )
        if status == 404:
            return None
        if status == 401:
            self._token = None  # expired or revoked: a new one at the next look
            raise NoticeError("the metadata service refused the IMDSv2 token (401)")
        if status != 200:
            raise NoticeError("spot/instance-action answered HTTP %d" % status)
        try:
            obj = json.loads(body.decode("utf-8"))
        except ValueError:
            raise NoticeError("spot/instance-action is not JSON: %r" % (body[:60],)) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("action"), str):
            raise NoticeError("spot/instance-action has no action: %r" % (body[:60],))
        return self._notice(str(obj["action"])[:32], obj.get("time"))

    def _aws_token(self) -> str:
        now = time.time()
        if self._token is not None and now < self._token_until:
            return self._token
        status, body = request(
            self.base + "latest/api/token",
            method="PUT",
            headers={"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL)},
        )
        token = body.decode("ascii", "replace").strip()
        if status != 200 or not token or not token.isprintable():
            raise NoticeError("no IMDSv2 token: PUT latest/api/token answered HTTP %d" % status)
        self._token, self._token_until = token, now + TOKEN_TTL - TOKEN_RENEW
        return token

    def _aliyun(self) -> Optional[Dict[str, Any]]:
        status, body = request(self.base + "latest/meta-data/instance/spot/termination-time")
        if status == 404:
            return None
        if status != 200:
            raise NoticeError("spot/termination-time answered HTTP %d" % status)
        return self._notice("terminate", body.decode("utf-8", "replace").strip())

    def _notice(self, action: str, when: Any) -> Dict[str, Any]:
        at = parse_time(when)
        return {"provider": self.provider, "action": action, "time": str(when).strip(), "at": at}
