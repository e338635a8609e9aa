"""The TUI runs the rules' engine while open (in a worker) and shows what they propose in the header
and on the job; `y` accepts (a restart-mode resize through the same core as `gpudeck scale`), `d`
dismisses. It never acts by itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tui import sync, until
from tui.app import GpuDeckApp
from tui.policy.journal import PolicyJournal
from tui.screens.deck import DeckScreen
from tui.screens.job import JobScreen
from tui.widgets.jobs_table import JobsTable
from tui.widgets.summary import FleetSummaryBar

ALWAYS_THREE = (
    '[[rule]]\nname = "all-day"\nkind = "schedule"\njobs = "tui-*"\nbetween = "00:00-23:59"\n'
    "nodes = 3\notherwise = 3\n"
)


def cli(*args: str, cwd: Path) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "tui", *args], capture_output=True, text=True, cwd=cwd, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def two_node_job(name: str, workdir: Path) -> str:
    (workdir / "ck").mkdir(exist_ok=True)
    script = 'echo "rank=$GPUDECK_NODE_RANK of=$GPUDECK_NNODES"; exec sleep 300'
    return cli(
        "run",
        "--name",
        name,
        "--grace",
        "5",
        "--nodes",
        "2",
        "--launcher",
        "none",
        "--",
        "bash",
        "-c",
        script,
        "x",
        "--checkpoint-dir",
        "ck",
        cwd=workdir,
    ).strip()


def header(app: GpuDeckApp) -> str:
    deck = next(s for s in app.screen_stack if isinstance(s, DeckScreen))
    return str(deck.query_one(FleetSummaryBar).render())


@pytest.mark.slow
@sync
async def test_a_proposal_shows_in_the_header_and_on_the_job_and_y_accepts_it(
    gpudeck_home: Path, workdir: Path
) -> None:
    (gpudeck_home / "policies.toml").write_text(ALWAYS_THREE)
    job_id = two_node_job("tui-grow", workdir)
    app = GpuDeckApp(store=None)
    app.proposals.period = 0.2
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.proposals, "the rule's proposal", timeout=30)
        await until(pilot, lambda: "1 proposal" in header(app), "the header saying it")
        assert len(app.fleet.jobs[job_id].nodes) == 2  # proposed, not done
        await pilot.press("2")
        app.screen.query_one(JobsTable).focus()
        await until(pilot, lambda: app.screen.current_job() is not None, "a selected job")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, JobScreen), "the job view")
        line = app.screen.query_one("#proposal")
        await until(
            pilot, lambda: line.display and "all-day" in str(line.render()), "the proposal on the job"
        )
        assert "2 → 3 nodes" in str(line.render()) and app.screen.check_action("accept_proposal", ())
        await pilot.press("y")
        await until(
            pilot,
            lambda: any(
                j.id != job_id and j.name == "tui-grow" and j.active and len(j.nodes) == 3
                for j in app.fleet.jobs.values()
            ),
            "the 3-node job",
            timeout=60,
        )
    new = next(j for j in app.fleet.jobs.values() if j.id != job_id and j.name == "tui-grow")
    obj = json.loads(cli("inspect", "--json", new.id, cwd=workdir))
    assert obj["resized_from"] == {"job": job_id, "nodes": 2}
    # the policy journal is the one memory: `policy run` (and this TUI restarted) see the accepted resize
    journal = PolicyJournal()
    accepted = [r for r in journal.records() if r.get("by") == "tui"]
    assert [(r["outcome"], r["new_job"], r["rule"]) for r in accepted] == [("applied", new.id, "all-day")]
    assert ("all-day", "tui-grow") in journal.memory()
    cli("kill", new.id, cwd=workdir)


@pytest.mark.slow
@sync
async def test_d_dismisses_a_proposal_and_it_stays_dismissed(gpudeck_home: Path, workdir: Path) -> None:
    (gpudeck_home / "policies.toml").write_text(ALWAYS_THREE)
    job_id = two_node_job("tui-keep", workdir)
    app = GpuDeckApp(store=None)
    app.proposals.period = 0.2
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: job_id in app.fleet.proposals, "the rule's proposal", timeout=30)
        app.push_screen(JobScreen(app.fleet, app.connections, app.job_control, job_id))
        await until(
            pilot,
            lambda: isinstance(app.screen, JobScreen) and app.screen.check_action("dismiss_proposal", ()),
            "the dismiss key",
        )
        await pilot.press("d")
        await until(pilot, lambda: job_id not in app.fleet.proposals, "the proposal gone")
        passes = [0]  # the engine keeps running: wait for two more passes
        original = app.proposals._decided

        def counted(decisions: list) -> None:
            passes[0] += 1
            original(decisions)

        app.proposals._decided = counted  # type: ignore[method-assign]
        await until(pilot, lambda: passes[0] >= 2, "two more passes of the engine")
        assert job_id not in app.fleet.proposals
        assert not app.screen.query_one("#proposal").display
        assert len(app.fleet.jobs[job_id].nodes) == 2
        # the deck draws nothing while the job view covers it: its header is read once it is back on top
        app.pop_screen()
        await until(pilot, lambda: "proposal" not in header(app), "the deck's header without the proposal")
    cli("kill", job_id, cwd=workdir)


@pytest.mark.slow  # the app starting: ~1 s
@sync
async def test_a_bad_policies_file_is_one_warning_and_the_tui_starts_without_rules(
    gpudeck_home: Path,
) -> None:
    (gpudeck_home / "policies.toml").write_text(ALWAYS_THREE.replace("nodes = 3\n", "nodes = 0\n"))
    app = GpuDeckApp(store=None, hosts=[])
    async with app.run_test(size=(120, 30)) as pilot:
        await until(
            pilot,
            lambda: any(
                "policies.toml:6: rule 'all-day': nodes" in str(n.message) for n in app._notifications
            ),
            "the warning",
        )
        assert app.proposals.policies.rules == ()
