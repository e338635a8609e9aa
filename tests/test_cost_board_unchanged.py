"""The cost service redraws only when the board changed (issue 17: idle CPU with 500 ended jobs):
the engine sends a board every second; with nothing running and no priced day ticking, it is the
same board, and the deck must not be redrawn for it."""

from __future__ import annotations

from tui.cost.report import CostContext
from tui.fleet import Fleet
from tui.fleet.costs import CostBoard, JobCostShown
from tui.services.costs import Costs


def board(accrued: float, burn: float | None = None) -> CostBoard:
    jobs = {
        f"J{i:03d}": JobCostShown(accrued=accrued + i, burn=None, projected=accrued + i, idle=0.0)
        for i in range(500)
    }
    return CostBoard("USD", burn=burn, jobs=jobs)


def test_an_unchanged_board_redraws_nothing_a_changed_one_does() -> None:
    changed: list[set[str]] = []
    fleet = Fleet()
    costs = Costs(
        app=object(),
        fleet=fleet,
        ctx=CostContext(),
        stop=lambda job, why: None,  # type: ignore[arg-type]
        changed=changed.append,
        ledger=False,
    )
    costs.updated(board(1.0))
    costs.updated(board(1.0))  # equal figures, new objects: the engine's next second
    assert changed == [{"cost"}]
    assert fleet.costs == board(1.0)
    costs.updated(board(1.0, burn=3.6))  # a job started: the fleet burns
    costs.updated(board(2.0, burn=3.6))  # and a job's figure moved
    assert changed == [{"cost"}, {"cost"}, {"cost"}]
