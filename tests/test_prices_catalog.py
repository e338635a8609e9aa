"""The shipped catalog and host price settings: sourced, dated, unknown stays unknown."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tui.cost import catalog
from tui.cost.settings import PriceSettingsError, host_price, validate_price_settings
from tui.policy.bigger import family, next_larger

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_catalog_is_valid() -> None:
    entries = catalog.validate(catalog.entries())
    assert len(entries) >= 10
    for e in entries:
        assert e.source and e.checked  # every entry: where from, and when
        for col in catalog.PRICE_COLUMNS:
            value = getattr(e, col)
            assert value is None or value >= 0
    # Unknown is written out, never left blank or made up.
    rows = list(csv.DictReader(io.StringIO(catalog.shipped_text())))
    for row in rows:
        assert all(v.strip() for v in row.values()), row
        if row["provider"] in ("aliyun", "tencent"):
            assert row["on_demand_usd_per_hour"] == catalog.UNKNOWN and row["as_of"] == catalog.UNKNOWN


FAMILIES = {  # the families a fleet moves within (issue 32): each holds its sizes, not one
    ("aws", "g4dn"): 7,
    ("aws", "g5"): 8,
    ("aws", "g6"): 8,
    ("aliyun", "gn7i"): 12,  # the five multi-GPU sizes (gn7i-2x/4x/8x) too
    ("aliyun", "gn7"): 3,
    ("aliyun", "gn6i"): 7,
    ("tencent", "GN10Xp"): 4,
}


def test_each_family_holds_its_sizes_and_the_next_larger_is_found() -> None:
    entries = catalog.entries()
    for (provider, fam), count in FAMILIES.items():
        sizes = [e for e in entries if e.provider == provider and family(provider, e.instance_type) == fam]
        assert len(sizes) >= count, (fam, [e.instance_type for e in sizes])
        assert all(e.gpus and e.gpu_model and e.vcpus and e.source and e.checked for e in sizes), fam
    for provider, kind, bigger in (
        ("aws", "g5.xlarge", "g5.2xlarge"),
        ("aws", "g4dn.xlarge", "g4dn.2xlarge"),
        ("aws", "g5.8xlarge", "g5.16xlarge"),  # 1 GPU, more CPUs before the 4-GPU size
        ("aws", "g6.24xlarge", "g6.48xlarge"),
        ("aws", "p5.4xlarge", "p5.48xlarge"),
        ("aliyun", "ecs.gn7i-c8g1.2xlarge", "ecs.gn7i-c16g1.4xlarge"),
        ("aliyun", "ecs.gn6i-c4g1.xlarge", "ecs.gn6i-c8g1.2xlarge"),
    ):
        p = next_larger(entries, provider, kind, "us-east-1" if provider == "aws" else None, "on-demand")
        assert p.next is not None and p.next.instance_type == bigger, (kind, p.next)
    # a known price stays where it was sourced; the others are unknown, never guessed
    assert catalog.find("aws", "g4dn.2xlarge", "us-east-1").on_demand_usd_per_hour == 0.752  # type: ignore[union-attr]
    assert catalog.find("aws", "g5.48xlarge", "us-east-1").on_demand_usd_per_hour == 16.288  # type: ignore[union-attr]
    for unpriced in (("tencent", "GN10Xp.5XLARGE80"), ("azure", "Standard_ND96isr_H100_v5")):
        assert catalog.find(*unpriced).on_demand_usd_per_hour is None  # type: ignore[union-attr]
    for azure in ("Standard_ND96asr_v4", "Standard_ND96isr_H100_v5"):
        assert catalog.find("azure", azure).gpus == 8  # type: ignore[union-attr]
    assert catalog.find("aws", "p4de.24xlarge").gpu_memory_gb == 80  # type: ignore[union-attr]
    assert catalog.find("aws", "p5.4xlarge").gpus == 1  # type: ignore[union-attr]


def test_catalog_lookup_and_json() -> None:
    g5 = catalog.find("aws", "g5.xlarge", "us-east-1")
    assert g5 is not None and g5.on_demand_usd_per_hour == 1.006 and g5.gpus == 1 and g5.as_of == "2025-H2"
    assert catalog.find("AWS", "g5.xlarge") == g5
    gn7 = catalog.find("aliyun", "ecs.gn7i-c8g1.2xlarge")
    assert gn7 is not None and gn7.on_demand_usd_per_hour is None
    assert gn7.to_json()["on_demand_usd_per_hour"] is None  # unknown is null in every --json
    assert catalog.find("aws", "no.such") is None and catalog.find(None, None) is None


def test_validate_refuses_broken_entries() -> None:
    text = catalog.build_rows(
        "provider,instance_type,region,gpus,gpu_model,gpu_memory_gb,vcpus,memory_gib,on_demand_usd_per_hour,"
        "spot_usd_per_hour_low,spot_usd_per_hour_high,source,as_of\n"
        "aws,x.large,us-east-1,1,T4,16,4,16,-1,,,somewhere,2025\n",
        checked="2026-11-29",
    )
    [entry] = catalog.parse(text)
    assert entry.spot_usd_per_hour_low is None and "unknown" in text
    with pytest.raises(catalog.CatalogError, match="negative"):
        catalog.validate([entry])


def test_validate_price_settings() -> None:
    out = validate_price_settings(
        {
            "price_per_hour": "2.5",
            "currency": "cny",
            "market": "Spot",
            "provider": "AWS",
            "region": "us-east-1a",
            "target": "keep@me",
        }
    )
    assert out == {
        "price_per_hour": 2.5,
        "currency": "CNY",
        "market": "spot",
        "provider": "aws",
        "region": "us-east-1a",
        "target": "keep@me",
    }
    assert validate_price_settings({"price_per_hour": ""}) == {"price_per_hour": None}  # removes the key
    for bad in (
        {"price_per_hour": "-1"},
        {"price_per_hour": "nan"},
        {"price_per_hour": "cheap"},
        {"currency": "dollars"},
        {"market": "reserved"},
        {"provider": "gcp"},
        {"instance_type": "a b"},
    ):
        with pytest.raises(PriceSettingsError, match=next(iter(bad))):
            validate_price_settings(bad)


def test_host_price_sources() -> None:
    own = host_price({"price_per_hour": 2.5})
    assert (own.per_hour, own.currency, own.source) == (2.5, "USD", "hosts.toml price_per_hour")
    assert own.spec_price(0.5) == {
        "per_hour": 2.5,
        "currency": "USD",
        "share": 0.5,
        "market": "on-demand",
        "source": "hosts.toml price_per_hour",
    }
    listed = host_price({"provider": "aws", "instance_type": "g5.xlarge", "region": "us-east-1b"})
    assert listed.per_hour == 1.006 and listed.source.startswith("catalog aws g5.xlarge us-east-1 on-demand")
    assert "2025-H2" in listed.source
    spot = host_price(
        {"provider": "aws", "instance_type": "g5.xlarge", "market": "spot"}, (0.43, "USD", "aws spot")
    )
    assert (spot.per_hour, spot.source) == (0.43, "aws spot")
    unknown = host_price({"provider": "aliyun", "instance_type": "ecs.gn7i-c8g1.2xlarge"})
    assert unknown.per_hour is None and unknown.source.startswith("unknown") and unknown.spec_price(1) is None
    assert host_price({}).per_hour is None


def test_prices_json_cli(gpudeck_home: Path, workdir: Path) -> None:
    (gpudeck_home / "hosts.toml").write_text("[hosts.local]\nprice_per_hour = 2.5  # my workstation\n")
    result = cli("prices", "--json", cwd=workdir)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["hosts"] == [
        {
            "host": "local",
            "per_hour": 2.5,
            "currency": "USD",
            "market": "on-demand",
            "source": "hosts.toml price_per_hour",
            "provider": None,
            "instance_type": None,
            "region": None,
            "instance_id": None,
        }
    ]
    assert any(e["on_demand_usd_per_hour"] is None for e in data["catalog"])
    human = cli("prices", cwd=workdir).stdout
    assert "g5.xlarge" in human and "unknown" in human


# Until the lead registers `cost` and `prices` in tui/cli.py, run them through the same entry point
# with the two modules added; once registered this is exactly `gpudeck`.
SHIM = """
import argparse, sys
from tui import cli
from tui.commands import cost, prices
build = cli.build_parser
def build_parser():
    parser = build()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, module in (("cost", cost), ("prices", prices)):
        if name not in sub.choices:
            module.add_parser(sub)
            cli.HANDLERS[name] = module.run
    return parser
cli.build_parser = build_parser
sys.exit(cli.run(sys.argv[1:]))
"""


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    from tui import cli as cli_mod

    if "cost" in cli_mod.HANDLERS and "prices" in cli_mod.HANDLERS:
        return gpudeck(*args, cwd=cwd, env=env)
    import os
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", SHIM, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
    )
