"""A host the controller launched for a pool is written into policies.toml's `[pool.NAME] hosts`:
the user's comments, order and layout stay; the file still loads; errors name the file and the pool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tui.policy.pool_file import add_pool_host
from tui.policy.rules import PolicyError, load

TEXT = """# GPU pools, by hand
[pool.gpus]
hosts = [
  "alpha",  # the box under my desk
  "beta",
]
launch = false   # not yet

[pool.other]
hosts = ["gamma"]

# the seeds' backlog rule
[[rule]]
name = "backlog"
kind = "metric"
pool = "gpus"
metric = "backlog"
above = 10000
add = 1
max = 4
"""


def test_the_host_joins_the_pool_and_everything_else_stays_as_written(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text(TEXT)
    assert add_pool_host(path, "gpus", "i-new1") is True
    after = path.read_text()
    assert load(path).pools["gpus"].hosts == ("alpha", "beta", "i-new1")
    assert load(path).pools["other"].hosts == ("gamma",)
    # one line more, in the list's own style; every line the user wrote is as it was
    assert after == TEXT.replace('  "beta",\n', '  "beta",\n  "i-new1",\n')
    assert add_pool_host(path, "gpus", "i-new1") is False and path.read_text() == after  # once


def test_an_inline_hosts_list_grows_in_place(tmp_path: Path) -> None:
    path = tmp_path / "policies.toml"
    path.write_text(TEXT)
    add_pool_host(path, "other", "i-9")
    assert 'hosts = ["gamma", "i-9"]' in path.read_text()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[[rule]]\nname = 'x'\n", "[pool.gpus] hosts: not a list of host names any more"),
        ("[pool.gpus\n", "not valid TOML"),
    ],
)
def test_a_file_that_cannot_take_the_host_says_which_and_why(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "policies.toml"
    path.write_text(text)
    with pytest.raises(PolicyError) as err:
        add_pool_host(path, "gpus", "i-1")
    assert str(err.value).startswith(f"{path}: ") and problem in str(err.value)
    assert path.read_text() == text  # nothing written
