"""The job view's advice panel: the seeds' troubleshooting the agents found from evidence
(remote_agent/advice/), each finding with its evidence and its remedies in order. Hidden while
there is none. User text (output lines, commands) reaches it as Content, never markup."""

from __future__ import annotations

from typing import Any

from textual.content import Content
from textual.widgets import Static

from ..advice_text import advice_lines


class JobAdvice(Static):
    DEFAULT_CSS = """
    JobAdvice {
        display: none;
        height: auto;
        max-height: 14;
        padding: 0 1;
        border-bottom: solid $panel;
    }
    """

    def show(self, advice: list[dict[str, Any]]) -> None:
        self.display = bool(advice)
        if not advice:
            return
        lines = []
        for line in advice_lines(advice, indent=""):
            if line.startswith("advice, "):
                lines.append(Content.styled(line, "bold $warning"))
            else:
                lines.append(Content.styled(line, "$text-muted"))
        self.update(Content("\n").join(lines))
