"""The header line that sums the fleet: hosts up, GPUs busy/total, running jobs, burn, and the day's
spend against the fleet's daily budget (from the live cost board; "—" where a price is unknown)."""

from __future__ import annotations

from collections.abc import Sequence

from textual.content import Content, Span
from textual.widgets import Static

from ..cost.rules import budget_status
from ..fleet import Fleet
from ..fleet.costs import CostBoard
from ..format import money


def spend_parts(b: CostBoard) -> list[str | tuple[str, str]]:
    """`burn $3.60/h   today $12.34 / $50.00`: today against the budget, coloured by how close."""
    burn = money(b.burn, b.currency, "/h")
    if b.burn is not None and b.unpriced:
        burn += " +?"  # some hosts have no price: the real burn is higher
    parts: list[str | tuple[str, str]] = ["   burn ", (burn, "$cost")]
    if b.today is not None or b.daily_budget is not None:
        parts += ["   today ", (money(b.today, b.currency), "$cost")]
    if b.daily_budget is not None:
        style = "$cost"
        if b.over:
            style = "bold $error"
        elif budget_status(b.today or 0.0, b.daily_budget) == "warning":
            style = "$warning"
        parts += [" / ", (money(b.daily_budget, b.currency) + (" reached" if b.over else ""), style)]
    return parts


def proposal_parts(fleet: Fleet) -> list[str | tuple[str, str]]:
    """`   2 proposals (y on the job)`: what the rules of policies.toml would change now."""
    n = sum(len(v) for v in fleet.proposals.values())
    if not n:
        return []
    return ["   ", (f"{n} proposal{'s' * (n != 1)}", "bold $warning"), " (y on the job accepts)"]


class FleetSummaryBar(Static):
    DEFAULT_CSS = """
    FleetSummaryBar { height: 1; padding: 0 1; }
    """

    replay: str | None = None  # the recording being played: said first, so nobody takes it for live
    read_only: bool = False  # every action refused: said first too
    _shown: tuple[str, Sequence[Span]] | None = None

    def show(self, fleet: Fleet) -> None:
        s = fleet.summary()
        replay: list[str | tuple[str, str]] = (
            [(" REPLAY ", "bold $text on $warning"), " ", self.replay, "   "]
            if self.replay is not None
            else []
        )
        if self.read_only:
            replay = [(" READ-ONLY ", "bold $text on $primary"), "   ", *replay]
        hosts_style = "$success" if s.hosts_up == s.hosts_total and s.hosts_total else "$warning"
        content = Content.assemble(
            *replay,
            ("gpudeck", "bold $accent"),
            "   hosts ",
            (f"{s.hosts_up}/{s.hosts_total} up", hosts_style),
            "   GPUs ",
            (f"{s.gpus_busy}/{s.gpus_total} busy", "$gpu-busy" if s.gpus_busy else ""),
            f"   jobs {s.jobs_running} running / {s.jobs_total}",
            *spend_parts(fleet.costs),
            *proposal_parts(fleet),
        )
        shown = (content.plain, content.spans)  # Content's == compares the text only, not the colours
        if shown != self._shown:  # one line high, always: a new picture needs no relayout
            self._shown = shown
            self.update(content, layout=False)
