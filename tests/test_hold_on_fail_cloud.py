"""A cloud instance whose host holds a failed job for debugging (--hold-on-fail) is not stopped by
its idle rule (`instance_idle_stop`), however idle its GPUs: the local Aliyun endpoint, the real
local agent, the real CLI."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import gpudeck as gpudeck_process
from tests.support.aliyun import AliyunServer, serving
from tests.support.waiting import wait_for
from tui import cli
from tui.hosts_file import set_host_fields


@pytest.fixture
def aliyun(gpudeck_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[AliyunServer]:
    with serving(monkeypatch) as server:
        yield server


def gpudeck(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.run(list(args))
    return code, out.getvalue(), err.getvalue()


def decision() -> dict:
    code, out, err = gpudeck("cloud", "enforce", "--json")
    assert code == 0, err
    [only] = json.loads(out)
    return only


@pytest.mark.slow  # a held job, then the rule twice: ~6 s
def test_a_held_host_is_kept_by_the_idle_rule_until_let_go(aliyun: AliyunServer, workdir: Path) -> None:
    now = time.time()
    iid = aliyun.account.add(name="idle", tags={"gpudeck-managed": "true"}, started=now - 7200)
    aliyun.account.metrics[iid] = [(now - 60 * k, 1.0) for k in range(40)]  # idle for 40 min
    set_host_fields("local", {"provider": "aliyun", "instance_id": iid, "instance_idle_stop": "30m@5%"})
    job_id = gpudeck_process("run", "--hold-on-fail", "1h", "--", "false", cwd=workdir).stdout.strip()
    wait_for(lambda: "(held)" in gpudeck_process("ps", "--all").stdout, what="the failed job held")

    kept = decision()
    assert kept["action"] == "keep" and kept["outcome"] == "keep"
    assert kept["reason"].startswith("held for debugging until ") and kept["reason"].endswith(
        f"(job {job_id})"
    )
    assert aliyun.account.status(iid) == "Running"

    assert gpudeck_process("stop", job_id).returncode == 0  # let go: the rule judges it as before
    stopped = decision()
    assert stopped["outcome"] == "stopped" and aliyun.account.status(iid) == "Stopped"
