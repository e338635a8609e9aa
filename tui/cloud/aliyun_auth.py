"""Aliyun credentials and default region, from the user's own chain (gpudeck stores no secret).

Order: ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET (+ _SECURITY_TOKEN), then ALIYUN_ACCESS_KEY_ID/_SECRET,
then ~/.aliyun/config.json as the aliyun CLI writes it (`current` profile, or ALIBABA_CLOUD_PROFILE /
ALIYUN_PROFILE / `[cloud] aliyun_profile`), modes AK and StsToken.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import CloudError


@dataclass(frozen=True)
class AliyunCredentials:
    key_id: str
    secret: str
    token: str | None
    source: str  # where they came from (never the secret itself)

    def __repr__(self) -> str:  # keep the secret out of any log or traceback
        return f"AliyunCredentials(key_id={self.key_id[:4]}…, source={self.source!r})"


def config_file() -> Path:
    return Path(os.path.expanduser("~")) / ".aliyun" / "config.json"


def _profile(name: str | None) -> dict[str, Any] | None:
    path = config_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise CloudError(f"aliyun: {path}: unreadable: {exc}") from None
    if not isinstance(data, dict):
        raise CloudError(f"aliyun: {path}: expected a JSON object")
    wanted = (
        name
        or os.environ.get("ALIBABA_CLOUD_PROFILE")
        or os.environ.get("ALIYUN_PROFILE")
        or data.get("current")
        or "default"
    )
    for profile in data.get("profiles") or []:
        if isinstance(profile, dict) and profile.get("name") == wanted:
            return profile
    if name:
        raise CloudError(f"aliyun: no profile {wanted!r} in {path}")
    return None


def credentials(profile: str | None = None) -> AliyunCredentials:
    env = os.environ
    for prefix in ("ALIBABA_CLOUD", "ALIYUN"):
        key, secret = env.get(f"{prefix}_ACCESS_KEY_ID"), env.get(f"{prefix}_ACCESS_KEY_SECRET")
        if key and secret:
            return AliyunCredentials(
                key, secret, env.get(f"{prefix}_SECURITY_TOKEN") or None, f"env {prefix}_ACCESS_KEY_ID"
            )
    found = _profile(profile)
    if found is not None:
        mode = str(found.get("mode") or "AK")
        key, secret = found.get("access_key_id"), found.get("access_key_secret")
        if mode in ("AK", "StsToken") and key and secret:
            token = found.get("sts_token") if mode == "StsToken" else None
            return AliyunCredentials(
                str(key),
                str(secret),
                str(token) if token else None,
                f"{config_file()} profile {found.get('name')}",
            )
        raise CloudError(
            f"aliyun: {config_file()} profile {found.get('name')}: mode {mode} is not supported "
            "(use AK or StsToken, or set ALIBABA_CLOUD_ACCESS_KEY_ID/SECRET)"
        )
    raise CloudError(
        "aliyun: no credentials (set ALIBABA_CLOUD_ACCESS_KEY_ID/ALIBABA_CLOUD_ACCESS_KEY_SECRET, "
        "or run `aliyun configure`)"
    )


def default_region(profile: str | None = None) -> str | None:
    region = os.environ.get("ALIBABA_CLOUD_REGION_ID") or os.environ.get("ALIYUN_REGION_ID")
    if region:
        return region
    try:
        found = _profile(profile)
    except CloudError:
        return None
    return str(found["region_id"]) if found and found.get("region_id") else None
