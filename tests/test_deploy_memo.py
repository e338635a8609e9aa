"""A cold CLI command does not probe python again on a host it has probed (deploy_memo.py): the
probe is a login shell and an interpreter per command. A remembered python that is gone costs one
failed connect, after which the host is probed again."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.sshd import SshHome
from tui.remote.deploy_memo import memo_path

pytestmark = pytest.mark.slow  # a real sshd and CLI processes

COUNTING_PYTHON = '#!/bin/sh\ncase "$2" in *version_info*) echo probe >> "{count}";; esac\nexec {py} "$@"\n'


def test_a_probed_host_is_not_probed_again(ssh_home: SshHome, tmp_path: Path) -> None:
    count, python = tmp_path / "probes", tmp_path / "python-counting"
    python.write_text(COUNTING_PYTHON.format(count=count, py=sys.executable))
    python.chmod(0o755)
    ssh_home.trust()
    ssh_home.add_host(python=str(python))
    for _ in range(2):
        listed = gpudeck("hosts", "--json", cwd=tmp_path)
        assert listed.returncode == 0 and json.loads(listed.stdout)[-1]["reachable"], listed.stderr
    assert count.read_text().splitlines() == ["probe"]  # the second command used the memo

    memo = json.loads(memo_path().read_text())
    memo_path().write_text(json.dumps(dict.fromkeys(memo, str(tmp_path / "gone" / "python3"))))
    stale = json.loads(gpudeck("hosts", "--json", cwd=tmp_path).stdout)[-1]
    assert not stale["reachable"] and "gone/python3" in stale["error"], stale  # said, and forgotten
    again = gpudeck("hosts", "--json", cwd=tmp_path)
    assert json.loads(again.stdout)[-1]["reachable"], again.stderr
    assert count.read_text().splitlines() == ["probe", "probe"]
