"""Third-party loggers kept quiet: paramiko logs a traceback for every failed handshake, and gpudeck
says it in one line instead. Set up when `logging` is first loaded (by one of those libraries or by
anything else), so a command that loads none of them does not pay logging's import (~3 ms of CPU)."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

LIBRARIES = ("paramiko", "botocore", "boto3", "aliyunsdkcore")


def quiet_libraries() -> None:
    loaded = sys.modules.get("logging")
    if loaded is not None:
        _quiet(loaded)
        return
    from importlib.machinery import PathFinder

    spec = PathFinder.find_spec("logging")
    if spec is None or spec.loader is None:  # not where the standard library keeps it: load it now
        import logging

        _quiet(logging)
        return
    sys.meta_path.insert(0, _WhenLoaded(spec))


def _quiet(logging: ModuleType) -> None:
    for name in LIBRARIES:
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


class _WhenLoaded:
    """A finder for `logging` alone: the standard library's own module, quieted once it has run. It
    stays in sys.meta_path (removing it while other threads import could make them skip a finder)."""

    def __init__(self, spec: Any) -> None:
        self.spec, self.loader, self.used = spec, spec.loader, False

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "logging" or self.used:
            return None
        self.used = True
        self.spec.loader = self
        return self.spec

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        _quiet(module)
