"""Blocking work asked for by screens and widgets, run the way every service runs its own: a thread
worker whose outcome comes back to a typed callback on the app thread (`Service.in_thread`). A screen
or widget never starts a thread or dispatches on worker names; it hands the work here, and its
callbacks are dropped once it is no longer on screen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.dom import DOMNode
from textual.worker import Worker

from .base import Done, Failed, Service


class Background(Service):
    def run(
        self,
        owner: DOMNode,
        fn: Callable[[], Any],
        *,
        group: str,
        exclusive: bool = False,
        done: Done | None = None,
        failed: Failed | None = None,
    ) -> Worker[Any]:
        """fn on a worker thread; done(result) / failed(error) on the app thread while `owner` is
        mounted. `group` is the owner's own: `exclusive` cancels only its earlier work of that group."""

        def alive(callback: Callable[[Any], object] | None) -> Callable[[Any], object] | None:
            if callback is None:
                return None
            return lambda value: callback(value) if owner.is_attached else None

        return self.in_thread(
            fn, group=f"{group}:{id(owner)}", exclusive=exclusive, done=alive(done), failed=alive(failed)
        )


def background(node: DOMNode) -> Background:
    """The app's Background service (GpuDeckApp owns one)."""
    service = getattr(node.app, "background", None)  # App[Any] does not know GpuDeckApp's services
    if not isinstance(service, Background):
        raise TypeError(f"{type(node.app).__name__} has no Background service")
    return service
