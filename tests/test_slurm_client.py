"""Slurm hosts (issue 30) without a cluster: what hosts.toml accepts, the options only a Slurm host
takes, and the login node check naming what is missing in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from remote_agent.slurm.probe import slurm_report
from tests.conftest import gpudeck
from tui.actions.options import LaunchOptions
from tui.actions.slurm_launch import placement


def test_a_login_node_without_slurm_says_which_tools_are_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing of Slurm's here
    report = slurm_report(tmp_path)
    assert report["missing"] == "not on PATH: sbatch, squeue, sacct, scancel, scontrol"
    assert report["tools_missing"] == ["sbatch", "squeue", "sacct", "scancel", "scontrol"]


def test_hosts_toml_names_a_bad_slurm_key(gpudeck_home: Path, tmp_path: Path) -> None:
    (gpudeck_home / "hosts.toml").write_text(
        '[hosts.cl]\ntarget = "login"\n[hosts.cl.slurm]\npartition = "gpu"\nqueue = "x"\n'
    )
    listed = gpudeck("hosts", "--json", cwd=tmp_path)
    assert listed.returncode == 2
    assert "hosts.toml:" in listed.stderr and "[hosts.cl] slurm: queue: unknown" in listed.stderr


def test_slurm_options_are_refused_on_other_hosts(gpudeck_home: Path, tmp_path: Path) -> None:
    ran = gpudeck("run", "--time", "1:00:00", "--", "true", cwd=tmp_path)
    assert ran.returncode == 2
    assert "--time: only for Slurm hosts" in ran.stderr


def test_a_bad_time_limit_names_the_option(gpudeck_home: Path, tmp_path: Path) -> None:
    (gpudeck_home / "hosts.toml").write_text('[hosts.cl]\ntarget = "login"\n[hosts.cl.slurm]\n')
    ran = gpudeck("run", "--host", "cl", "--time", "two hours", "--", "true", cwd=tmp_path)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.strip().count("\n") == 0 and "--time: spec.placement.time" in ran.stderr


def test_account_and_qos_are_options_of_run_as_of_the_launch_form(gpudeck_home: Path, tmp_path: Path) -> None:
    ran = gpudeck("run", "--qos", "high", "--", "true", cwd=tmp_path)
    assert ran.returncode == 2 and "--qos: only for Slurm hosts" in ran.stderr, ran.stderr
    (gpudeck_home / "hosts.toml").write_text(
        '[hosts.cl]\ntarget = "login"\n[hosts.cl.slurm]\naccount = "lab"\n'
    )
    ran = gpudeck("run", "--host", "cl", "--account", "lab b", "--", "true", cwd=tmp_path)
    assert ran.returncode == 2 and ran.stderr.strip().count("\n") == 0, ran.stderr
    assert "--account: spec.placement.account" in ran.stderr  # the option's value, not hosts.toml's


def test_an_accounts_option_goes_to_sbatch_over_the_hosts(gpudeck_home: Path) -> None:
    place = placement(
        LaunchOptions(argv=("true",), host="cl", account="grant-7", qos="high"),
        {"account": "lab", "qos": "low"},
    )
    assert (place.account, place.qos) == ("grant-7", "high")
    assert (placement(LaunchOptions(argv=("true",), host="cl"), {"account": "lab"}).account) == "lab"


def test_hosts_add_slurm_options_need_slurm(gpudeck_home: Path, tmp_path: Path) -> None:
    added = gpudeck("hosts", "add", "cl", "login", "--partition", "gpu", "--no-connect", cwd=tmp_path)
    assert added.returncode == 2 and "--partition: goes with --slurm" in added.stderr
    added = gpudeck("hosts", "add", "cl", "login", "--slurm", "--qos", "a b", "--no-connect", cwd=tmp_path)
    assert added.returncode == 2 and "--qos" in added.stderr
    added = gpudeck(
        "hosts", "add", "cl", "login", "--slurm", "--account", "lab", "--no-connect", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert '[hosts.cl.slurm]\naccount = "lab"' in (gpudeck_home / "hosts.toml").read_text()
