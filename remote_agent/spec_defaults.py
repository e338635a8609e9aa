"""What of a job's spec a running supervisor needs without the typed spec (spec.py): the defaults it
applies and the error a bad field raises. spec.py's dataclasses (and dataclasses' inspect) would
stay loaded in each of a host's supervisors for its job's life (issue 33); spec.py re-exports these."""

from __future__ import annotations

DEFAULT_GRACE = 60.0
DEFAULT_OUTPUT_CAP = 1 << 30  # 1 GiB: 512 MiB of head, 512 MiB of tail
MIN_OUTPUT_CAP = 1 << 20  # 1 MiB: a smaller cap would drop a traceback


class SpecError(ValueError):
    """A spec field is wrong; the message names the field (`spec.multinode.nodes: …`)."""
