"""`[ssh] persist` (tui/ssh_persist.py): read as OpenSSH reads ControlPersist, $GPUDECK_SSH_PERSIST first."""

from __future__ import annotations

import pytest

from tui import ssh_persist


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        (30, 30.0),
        (2.5, 2.5),
        ("90", 90.0),
        ("10m", 600.0),
        ("1h30m", 5400.0),
        ("2D", 172800.0),
        ("no", 0.0),
        ("yes", 600.0),
        (False, 0.0),
        (True, 600.0),
    ],
)
def test_values_read_as_controlpersist(value: object, seconds: float) -> None:
    assert ssh_persist.parse(value) == seconds


@pytest.mark.parametrize("value", ["ten", "10x", "", "-5", -1, "m10", None])
def test_bad_values_say_what_is_accepted(value: object) -> None:
    with pytest.raises(ValueError, match="expected"):
        ssh_persist.parse(value)


def test_the_environment_wins_over_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ssh_persist.ENV, raising=False)
    assert ssh_persist.effective(42.0) == 42.0
    monkeypatch.setenv(ssh_persist.ENV, "0")
    assert ssh_persist.effective(42.0) == 0.0
    monkeypatch.setenv(ssh_persist.ENV, "soon")
    with pytest.raises(ValueError, match=r"\$GPUDECK_SSH_PERSIST: expected"):
        ssh_persist.effective(42.0)
