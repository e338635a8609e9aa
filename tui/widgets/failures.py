"""The one place that turns failures into UI: a notification with a title and a one-line reason,
never a traceback (that goes to Textual's devtools log). Handlers that draw remote data are
wrapped, so a surprise in the data cannot take the app down."""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from textual.dom import DOMNode
from textual.notifications import SeverityLevel

from ..printable import printable

Node = TypeVar("Node", bound=DOMNode)
Args = ParamSpec("Args")
Result = TypeVar("Result")


def say(
    node: DOMNode,
    message: str,
    title: str = "",
    severity: SeverityLevel = "information",
    timeout: float | None = None,
) -> None:
    """A notification whose text is never markup: job names, commands, causes and remote errors
    often hold `[`, `=` or `/` (Textual's notify parses markup by default), and may hold ESC."""
    node.app.notify(
        printable(message), title=printable(title), severity=severity, timeout=timeout, markup=False
    )


def report(node: DOMNode, title: str, error: BaseException | str, severity: SeverityLevel = "error") -> None:
    reason = error if isinstance(error, str) else (str(error) or type(error).__name__)
    if isinstance(error, BaseException):  # the details go to Textual's devtools log, not the screen
        node.log.error(title, "".join(traceback.format_exception(error)))
    say(
        node,
        reason.splitlines()[0][:300] if reason else title,
        title,
        severity,
        timeout=8 if severity == "error" else 5,
    )


def guarded(
    title: str,
) -> Callable[[Callable[Concatenate[Node, Args], Result]], Callable[Concatenate[Node, Args], Result | None]]:
    """Wrap a handler of a DOM node: an exception becomes a notification instead of a crash."""

    def wrap(
        method: Callable[Concatenate[Node, Args], Result],
    ) -> Callable[Concatenate[Node, Args], Result | None]:
        @functools.wraps(method)
        def inner(self: Node, /, *args: Args.args, **kwargs: Args.kwargs) -> Result | None:
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                report(self, title, exc)
                return None

        return inner

    return wrap
