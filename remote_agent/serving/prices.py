"""The host's price as gpudeck last told it (`price` op): `<agent dir>/price.json`, a dated list of
changes that running supervisors read for their budgets (supervision/budget.py)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Dict, Optional

from ..storage.files import write_private_atomic
from ..storage.jsonio import dumps
from ..supervision.budget import PRICE_FILE, read_price_changes

MAX_CHANGES = 200  # the file stays small: old changes priced jobs long gone


class PriceError(ValueError):
    pass


def record_price(
    root: Path, per_hour: Any, currency: Any, at: Any, now: Optional[float] = None
) -> Dict[str, Any]:
    """Append a change when the price differs from the last one. `at` (host epoch seconds) is when it
    happened; it is kept between the last change and now, so periods stay in order and never start
    in the future. `per_hour` null: the price was removed."""
    now = time.time() if now is None else now
    if per_hour is not None and (
        isinstance(per_hour, bool)
        or not isinstance(per_hour, (int, float))
        or not math.isfinite(per_hour)
        or per_hour < 0
    ):
        raise PriceError("price: per_hour must be a number >= 0 or null, not %r" % (per_hour,))
    if not isinstance(currency, str) or not currency.isalpha() or len(currency) != 3:
        raise PriceError("price: currency must be a 3-letter code, not %r" % (currency,))
    if at is None:
        at = now
    if isinstance(at, bool) or not isinstance(at, (int, float)) or not math.isfinite(at):
        raise PriceError("price: at must be epoch seconds, not %r" % (at,))
    path = root / PRICE_FILE
    changes = read_price_changes(path)
    last = changes[-1] if changes else None
    if last is not None and last[1] == per_hour and (per_hour is None or last[2] == currency.upper()):
        return {"recorded": False, "at": last[0]}
    at = min(float(at), now)
    if last is not None:
        at = max(at, last[0])
    changes.append((at, None if per_hour is None else float(per_hour), currency.upper()))
    body = {"changes": [{"at": a, "per_hour": p, "currency": c} for a, p, c in changes[-MAX_CHANGES:]]}
    write_private_atomic(path, dumps(body).encode("utf-8"))
    return {"recorded": True, "at": at}
