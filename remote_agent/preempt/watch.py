"""The notice watch of one running job: a daemon thread of its supervisor that looks at the
provider's metadata every POLL seconds and, on a notice, hands it over once (then stops looking).

Why in each supervisor and not in the host's keeper: the supervisor owns its job's stop, journal
and end, so a notice becomes a stop in the same process with no cross-process control file racing a
user's stop; it runs exactly while its job runs (an adopter of the job watches again); and the
keeper may be down for up to a few seconds or leave when idle. The price is one small request per
running job every POLL seconds to a link-local service that allows thousands a second.

A failed look (no endpoint, refused token, garbage) never stops the job: the first of each kind is
reported once (on_error) and the watch keeps looking.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Set

from .metadata import PROVIDERS, MetadataWatch, NoticeError, endpoint

POLL = 2.0  # seconds between looks: a notice is seen within POLL + a request's time
POLL_VAR = "GPUDECK_NOTICE_POLL"  # tests and benches may look more or less often


def poll_interval() -> float:
    try:
        return min(60.0, max(0.05, float(os.environ.get(POLL_VAR, POLL))))
    except ValueError:
        return POLL


class NoticeWatch:
    def __init__(
        self,
        watch: MetadataWatch,
        on_notice: Callable[[Dict[str, Any]], None],
        on_error: Callable[[str], None],
    ) -> None:
        self.watch = watch
        self.on_notice = on_notice
        self.on_error = on_error
        self.every = poll_interval()
        self._stop = threading.Event()
        self._said: Set[str] = set()  # the kinds of failed look already reported
        self.thread = threading.Thread(target=self._run, name="preempt-notice", daemon=True)

    @classmethod
    def start(
        cls,
        spec: Mapping[str, Any],
        on_notice: Callable[[Dict[str, Any]], None],
        on_error: Callable[[str], None],
        environ: Mapping[str, str] = os.environ,
    ) -> Optional[NoticeWatch]:
        """The watch for a spec whose host has a provider with a notice; None for any other."""
        notice = spec.get("notice")
        if not isinstance(notice, dict) or notice.get("provider") not in PROVIDERS:
            return None
        provider = str(notice["provider"])
        base = endpoint(provider, notice.get("metadata_endpoint"), environ)
        watch = cls(MetadataWatch(provider, base), on_notice, on_error)
        watch.thread.start()
        return watch

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            found = self.look_once()
            if found is not None:
                found["seen_at"] = time.time()
                self.on_notice(found)
                return
            self._stop.wait(self.every)

    def look_once(self) -> Optional[Dict[str, Any]]:
        try:
            return self.watch.look()
        except (NoticeError, OSError, ValueError) as exc:
            self._error(str(exc) if isinstance(exc, NoticeError) else "metadata endpoint: %s" % exc)
        except Exception as exc:  # a watch must never take its supervisor down
            self._error("notice watch: %s" % type(exc).__name__)
        return None

    def _error(self, message: str) -> None:
        kind = message.split(":")[0][:40]
        if kind not in self._said:
            self._said.add(kind)
            self.on_error(message[:200])
