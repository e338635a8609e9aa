"""hosts.toml is parsed once per command, by tomllib (#25, finding 19): `ps` over N hosts parsed it N
times with tomlkit, so its time grew with the square of N. The time itself is bench/bench_ps_hosts.py's."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import tomlkit

from tests.support.spying import record_calls
from tui.tomlfile import tomllib


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ps_over_many_hosts_parses_hosts_toml_once(
    gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tui import cli

    port = _closed_port()
    (gpudeck_home / "hosts.toml").write_text(
        "".join(f'[hosts.h{i}]\ntarget = "127.0.0.1:{port}"\n' for i in range(40))
    )
    by_tomlkit = record_calls(monkeypatch, tomlkit, "parse")
    by_tomllib = record_calls(monkeypatch, tomllib, "loads", lambda text: "[hosts.h0]" in text)
    assert cli.run(["ps"]) == 4  # every host unreachable
    assert by_tomlkit == []  # tomlkit is for writes that keep comments, never for a read
    assert by_tomllib.count(True) == 1, by_tomllib
    assert capsys.readouterr().err.count("skipping a host") == 40
