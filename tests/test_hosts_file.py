"""hosts.toml: comments and unknown fields survive edits, writes are atomic, `local` is always there."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tui.errors import EXIT_USAGE
from tui.hosts_file import (
    HostEntry,
    HostsFileError,
    add_host,
    hosts_path,
    load_hosts,
    remove_host,
)

USER_FILE = """# my GPU boxes
[hosts.a100]  # the big one
target = "ubuntu@10.0.0.5:2222"
price_per_hour = 3.06   # the cost feature's field: not ours, must stay
labels = { team = "vision", owner = "ana" }   # a field no feature knows: kept as written
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path))
    return tmp_path


def test_local_is_always_there(home: Path) -> None:
    assert list(load_hosts()) == ["local"]
    with pytest.raises(HostsFileError):
        remove_host("local")
    with pytest.raises(HostsFileError):
        add_host(HostEntry(name="local", target="x"))


def test_edits_keep_comments_order_and_unknown_fields(home: Path) -> None:
    hosts_path().write_text(USER_FILE)
    add_host(
        HostEntry(
            name="h100",
            target="gpu-alias",
            python="/opt/py/bin/python3",
            setup=["source ~/venv/bin/activate"],
        )
    )
    text = hosts_path().read_text()
    assert text.startswith(USER_FILE)  # the user's part, byte for byte
    hosts = load_hosts()
    assert list(hosts) == ["local", "a100", "h100"]
    assert hosts["a100"].extra == {"price_per_hour": 3.06, "labels": {"team": "vision", "owner": "ana"}}
    assert hosts["h100"].setup == ["source ~/venv/bin/activate"] and hosts["h100"].agent_dir == "~/.gpudeck"
    with pytest.raises(HostsFileError, match="already exists"):
        add_host(HostEntry(name="h100", target="other"))
    add_host(HostEntry(name="a100", target="ubuntu@10.0.0.6", identity_file="~/.ssh/a100"), replace=True)
    assert (
        "price_per_hour = 3.06   # the cost feature's field: not ours, must stay" in hosts_path().read_text()
    )
    assert load_hosts()["a100"].target == "ubuntu@10.0.0.6"
    remove_host("h100")
    assert "# my GPU boxes" in hosts_path().read_text() and "h100" not in hosts_path().read_text()
    assert [p.name for p in home.iterdir() if p.name.startswith(".hosts-")] == []  # no temp file left


def test_bad_file_is_one_line(home: Path) -> None:
    hosts_path().write_text("[hosts.x\n")
    with pytest.raises(HostsFileError, match="not valid TOML"):
        load_hosts()
    hosts_path().write_text("[hosts.x]\npython = 'p'\n")
    with pytest.raises(HostsFileError, match="no target"):
        load_hosts()


@pytest.mark.slow
def test_cli_add_rm(home: Path, tmp_path: Path) -> None:
    added = gpudeck(
        "hosts", "add", "g1", "me@gpu1:2222", "--setup", "conda activate x", "--no-connect", cwd=tmp_path
    )
    assert added.returncode == 0, added.stderr
    assert load_hosts()["g1"].setup == ["conda activate x"]
    assert gpudeck("hosts", "add", "g1", "gpu1", "--no-connect", cwd=tmp_path).returncode == EXIT_USAGE
    assert gpudeck("hosts", "add", "bad;name", "gpu1", "--no-connect", cwd=tmp_path).returncode == EXIT_USAGE
    assert gpudeck("hosts", "add", "g2", "gpu1:port", "--no-connect", cwd=tmp_path).returncode == EXIT_USAGE
    assert gpudeck("hosts", "rm", "g1", cwd=tmp_path).returncode == 0
    assert list(load_hosts()) == ["local"]
    assert gpudeck("hosts", "rm", "g1", cwd=tmp_path).returncode == EXIT_USAGE


@pytest.mark.slow
def test_hosts_set_writes_checked_price_settings_and_keeps_comments(tmp_path, monkeypatch):
    import json as _json

    from tests.conftest import gpudeck as run_cli

    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path))
    (tmp_path / "hosts.toml").write_text(
        '# my fleet\n[hosts.local]\n# rented by the hour\nregion = "us-east-1"\n'
    )
    ok = run_cli("hosts", "set", "local", "price_per_hour=2.5", "market=Spot", "currency=usd")
    assert ok.returncode == 0, ok.stderr
    text = (tmp_path / "hosts.toml").read_text()
    assert "# my fleet" in text and "# rented by the hour" in text
    assert "price_per_hour = 2.5" in text and 'market = "spot"' in text and 'currency = "USD"' in text
    prices = _json.loads(run_cli("prices", "--json").stdout)
    assert "2.5" in _json.dumps(prices)
    removed = run_cli("hosts", "set", "local", "market=")
    assert removed.returncode == 0 and "market" not in (tmp_path / "hosts.toml").read_text()
    bad = run_cli("hosts", "set", "local", "price_per_hour=cheap")
    assert (
        bad.returncode == 2 and "price_per_hour" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    )
    unknown = run_cli("hosts", "set", "local", "colour=red")
    assert unknown.returncode == 2 and "unknown setting 'colour'" in unknown.stderr
    nohost = run_cli("hosts", "set", "gpu-box", "price_per_hour=1")
    assert nohost.returncode == 2 and "unknown host 'gpu-box'" in nohost.stderr


def test_a_wrong_type_in_hosts_toml_is_one_line_naming_the_field(tmp_path, monkeypatch):
    from tests.conftest import gpudeck as run_cli

    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path))
    (tmp_path / "hosts.toml").write_text("[hosts.gpu1]\ntarget = 5\n")
    result = run_cli("ps")
    assert result.returncode == 2  # a bad value in a file of yours is bad input, as a bad option is
    assert (
        result.stderr.strip()
        == f"gpudeck: {tmp_path / 'hosts.toml'}:2: [hosts.gpu1] target: expected a string, got 5"
    )


def test_a_peer_that_is_not_ssh_is_one_line_not_a_traceback(tmp_path, monkeypatch):
    import socket
    import threading

    from tests.conftest import gpudeck as run_cli

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def hang_up() -> None:  # accepts, then closes without a banner: paramiko's handshake fails
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        monkeypatch.setenv("GPUDECK_HOME", str(tmp_path))
        (tmp_path / "hosts.toml").write_text(f'[hosts.box]\ntarget = "127.0.0.1:{port}"\n')
        result = run_cli("hosts")
    finally:
        server.close()
    assert "Traceback" not in result.stderr and "Exception (client)" not in result.stderr
    assert "box" in result.stdout and "unreachable" in result.stdout


def test_hosts_file_knows_the_cost_features_keys() -> None:
    """hosts_file names them to check a host's table without importing the cost package at start-up."""
    from tui.cost.settings import COST_KEYS
    from tui.hosts_file import COST_FIELDS

    assert COST_FIELDS == COST_KEYS
