"""One provider object per (provider, region) the user's config and credentials point at."""

from __future__ import annotations

from ..settings import CloudSettings
from .model import CloudError, Provider
from .retry import RetryPolicy

PROVIDERS = ("aws", "aliyun")


def regions(name: str, cloud: CloudSettings) -> list[str]:
    """`[cloud] aws_regions` / `aliyun_regions`, else the provider's own default region (or none)."""
    configured = cloud.aws_regions if name == "aws" else cloud.aliyun_regions
    if configured:
        return list(configured)
    if name == "aws":
        from .aws import default_region
    else:
        from .aliyun_auth import default_region
    region = default_region(cloud.aws_profile if name == "aws" else cloud.aliyun_profile)
    return [region] if region else []


def make(
    name: str, region: str, cloud: CloudSettings, retry: RetryPolicy | None = None, timeout: float = 10.0
) -> Provider:
    if name == "aws":
        from .aws import AwsProvider

        return AwsProvider(region, cloud.aws_endpoint_url, cloud.aws_profile, timeout=timeout, retry=retry)
    if name == "aliyun":
        from .aliyun import AliyunProvider

        return AliyunProvider(
            region,
            cloud.aliyun_ecs_endpoint,
            cloud.aliyun_cms_endpoint,
            cloud.aliyun_profile,
            timeout=timeout,
            retry=retry,
        )
    raise CloudError(f"unknown provider {name!r} (known: {', '.join(PROVIDERS)})")


def configured(cloud: CloudSettings, only: str | None = None) -> tuple[list[Provider], list[str]]:
    """Every usable (provider, region), and one line per provider that cannot be used and why."""
    out: list[Provider] = []
    problems: list[str] = []
    unset: list[
        str
    ] = []  # a provider with no region at all is one the user does not use: said only if none is
    for name in [only] if only else list(PROVIDERS):
        try:
            found = regions(name, cloud)
            if not found:
                unset.append(
                    f"{name}: no region (set [cloud] {name}_regions in config.toml, or "
                    f"{'AWS_DEFAULT_REGION' if name == 'aws' else 'ALIBABA_CLOUD_REGION_ID'})"
                )
            for region in found:
                out.append(make(name, region, cloud))
        except CloudError as exc:
            problems.append(str(exc))
    if only or not (out or problems):
        problems += unset
    return out, problems
