"""Issue 29, finding 11: `--nodes` and `--nproc-per-node` have a ceiling, and a job gets no more
nodes than its hosts hold; each refusal is one usage line, before anything starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import gpudeck
from tests.support.trainer_runs import ok
from tui.actions.node_bounds import MAX_NODES_PER_HOST


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--nodes", str(MAX_NODES_PER_HOST + 1)],
            f"--nodes {MAX_NODES_PER_HOST + 1}: more than the job's 1 host hold",
        ),
        (["--nodes", "2", "--nproc-per-node", "100000"], "--nproc-per-node 100000: at most 64"),
        (["--nodes", "100000"], "--nodes 100000: at most 128 nodes per job"),
    ],
)
def test_node_counts_past_the_bounds_are_refused_before_anything_starts(
    gpudeck_home: Path, workdir: Path, flags: list[str], message: str
) -> None:
    r = gpudeck("run", *flags, "--launcher", "none", "--", "true", cwd=workdir)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert json.loads(ok("ps", "--all", "--json")) == []  # nothing was launched
