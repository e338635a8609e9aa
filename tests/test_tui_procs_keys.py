"""The process view's keys (issue 36, findings 9 and 10): q quits there too, j/k move, `<`/`>` sort
by GPU memory / CPU / RSS / PID and `O` reverses, `T` shows parents and children as a tree, and `x`
asks before a SIGTERM to the selected process (never the supervisor)."""

from __future__ import annotations

from textual.widgets import DataTable

from tests.support.tui import sync, until
from tui.actions.procs import ProcRow, ProcTable
from tui.app import GpuDeckApp
from tui.fleet import JobModel
from tui.screens.confirm import ConfirmScreen
from tui.screens.procs import ProcessesScreen

MIB = 1 << 20
TABLE = ProcTable(
    (
        ProcRow("local", "0", 100, 1, "supervisor", "gpudeck run", 1.0, 30 * MIB, ()),
        ProcRow("local", "0", 200, 100, "command", "torchrun train.py", 5.0, 80 * MIB, ()),
        ProcRow("local", "0", 301, 200, "child", "python worker-a", 90.0, 900 * MIB, ((0, 4000),)),
        ProcRow("local", "0", 302, 200, "child", "python worker-b", 40.0, 2000 * MIB, ((1, 9000),)),
    ),
    (),
)


def pids(screen: ProcessesScreen) -> list[str]:
    grid = screen.query_one(DataTable)
    return [str(grid.get_row_at(i)[2]) for i in range(grid.row_count)]


def commands(screen: ProcessesScreen) -> list[str]:
    grid = screen.query_one(DataTable)
    return [str(grid.get_row_at(i)[-1]) for i in range(grid.row_count)]


async def _opened(app: GpuDeckApp, pilot) -> ProcessesScreen:  # type: ignore[no-untyped-def]
    app.fleet.jobs["job-1"] = JobModel(id="job-1", name="train", state="running")
    screen = ProcessesScreen(app.fleet, app.connections, app.job_control, job_id="job-1")
    screen._ask = lambda: None  # type: ignore[method-assign]  # these rows, not a nodeless job's
    await app.push_screen(screen)
    screen.show(TABLE)
    await until(pilot, lambda: len(pids(screen)) == 4, "the rows")
    return screen


@sync
async def test_sort_reverse_tree_and_jk_in_the_process_view() -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(140, 30)) as pilot:
        screen = await _opened(app, pilot)
        assert pids(screen) == ["100", "200", "301", "302"]  # by node and role
        await pilot.press("j", "j")
        assert screen.query_one(DataTable).cursor_row == 2
        await pilot.press("k")
        assert screen.query_one(DataTable).cursor_row == 1
        await pilot.press(">")  # GPU memory, biggest first
        assert pids(screen) == ["302", "301", "100", "200"]
        await pilot.press(">")  # CPU
        assert pids(screen) == ["301", "302", "200", "100"]
        await pilot.press("O")  # reversed
        assert pids(screen) == ["100", "200", "302", "301"]
        await pilot.press("<", "O")  # back to GPU memory, biggest first again
        assert pids(screen) == ["302", "301", "100", "200"]
        await pilot.press("T")  # the tree: each child under its parent, siblings still by GPU memory
        assert pids(screen) == ["100", "200", "302", "301"]
        assert commands(screen)[1:] == [
            "└─ torchrun train.py",
            "  └─ python worker-b",
            "  └─ python worker-a",
        ]
        assert "sort: GPU mem ↓ · tree" in str(screen.query_one("#procs-status").render())


@sync
async def test_x_asks_before_a_sigterm_and_refuses_the_supervisor_and_q_quits() -> None:
    app = GpuDeckApp(hosts=[], store=None)
    async with app.run_test(size=(140, 30)) as pilot:
        screen = await _opened(app, pilot)
        await pilot.press("x")  # the cursor is on the supervisor
        await until(pilot, lambda: any("supervisor" in str(n.message) for n in app._notifications), "why not")
        assert app.screen is screen
        await pilot.press("j", "j", "x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        assert "Send SIGTERM to PID 301?" in app.export_screenshot().replace("&#160;", " ")
        await pilot.press("n")
        await until(pilot, lambda: app.screen is screen, "back, nothing sent")
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "quit from the process view")
