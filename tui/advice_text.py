"""A job's advice (remote_agent/advice/) as lines of text, for `inspect` and the TUI's job view:
the finding and the node that said it first, the evidence, then the remedies in their order."""

from __future__ import annotations

from typing import Any

_TITLES = {
    "oom": "CUDA out of memory",
    "nccl": "NCCL error",
    "loader": "data loader starving the GPU",
    "gpu_health": "GPU health",
}
_SKIPPED = ("line",)  # said on a line of its own


def advice_lines(advice: list[dict[str, Any]], indent: str = "  ") -> list[str]:
    out: list[str] = []
    for a in advice:
        kind = str(a.get("kind"))
        nodes = a.get("nodes") or []
        where = f" (node {a.get('node')} first of {', '.join(map(str, nodes))})" if len(nodes) > 1 else ""
        out.append(f"{indent}advice, {_TITLES.get(kind, kind)}{where}: {a.get('why')}")
        got = a.get("evidence")
        evidence: dict[str, Any] = got if isinstance(got, dict) else {}
        if evidence.get("line"):
            out.append(f"{indent}  output: {evidence['line']}")
        facts = [
            f"{k}={_value(v)}" for k, v in evidence.items() if k not in _SKIPPED and v not in (None, [], {})
        ]
        if facts:
            out.append(f"{indent}  evidence: {'; '.join(facts)}")
        for i, remedy in enumerate(a.get("remedies") or [], 1):
            out.append(f"{indent}  {i}. {remedy}")
    return out


def _value(v: Any) -> str:
    if isinstance(v, list) and v and isinstance(v[0], dict):
        return ", ".join(
            " ".join(f"{k}={x}" for k, x in item.items() if k not in ("uuid", "ecc", "xid")) for item in v
        )
    if isinstance(v, list):
        return ",".join(map(str, v))
    return str(v)
