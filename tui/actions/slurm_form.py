"""The launch form's Slurm fields (issue 30): partition, nodes, GPUs per node, time limit, account
and QOS, shown when the chosen host is a Slurm host. Checked here into the same LaunchOptions as
`gpudeck run --nodes N --gpus-per-node G --time T --partition P`, and tried against the spec's own
rules (the Slurm placement), so a bad value is one line naming its field, in the form."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ..errors import GpudeckError
from .options import LaunchOptions, usage
from .slurm_launch import placement

FIELDS = ("partition", "nodes", "gpus_per_node", "time", "account", "qos")
LABELS = {
    "partition": "Slurm partition",
    "nodes": "Slurm nodes (one task of gpudeck's supervisor on each)",
    "gpus_per_node": "Slurm GPUs per node",
    "time": "Slurm time limit (every node checkpoints 2 min before it)",
    "account": "Slurm account",
    "qos": "Slurm QOS",
}


@dataclass(frozen=True)
class SlurmForm:
    """What the form shows for one Slurm host: its `[hosts.NAME.slurm]` defaults as placeholders."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None

    @classmethod
    def of_table(cls, table: dict[str, Any]) -> SlurmForm:
        def text(key: str) -> str | None:
            value = table.get(key)
            return value if isinstance(value, str) and value else None

        return cls(text("partition"), text("account"), text("qos"))

    def placeholder(self, field: str) -> str:
        default = {"partition": self.partition, "account": self.account, "qos": self.qos}.get(field)
        return {
            "nodes": "1",
            "gpus_per_node": "none, e.g. 8",
            "time": "the partition's limit, e.g. 2:00:00",
        }.get(field, f"the host's: {default}" if default else "Slurm's default")


def _count(text: str, field: str, low: int) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not text.isdigit() or int(text) < low:
        raise usage(f"{field.replace('_', ' ')}: expected a whole number, {low} or more, got {text!r}")
    return int(text)


def slurm_options(opts: LaunchOptions, fields: dict[str, str], form: SlurmForm) -> LaunchOptions:
    """`opts` (the form's other fields) with the allocation asked; GpudeckError naming the field."""
    given = {k: (fields.get(k) or "").strip() for k in FIELDS}
    asked = replace(
        opts,
        nodes=_count(given["nodes"], "nodes", 1) or 1,
        gpus_per_node=_count(given["gpus_per_node"], "gpus_per_node", 0),
        time_limit=given["time"] or None,
        partition=given["partition"] or None,
        account=given["account"] or None,
        qos=given["qos"] or None,
    )
    table = {
        k: v for k, v in (("partition", form.partition), ("account", form.account), ("qos", form.qos)) if v
    }
    try:
        placement(asked, table)  # the spec's own checks, as the launch will make them
    except GpudeckError as exc:
        said = str(exc)
        for option, field in (
            ("--time", "time"),
            ("--partition", "partition"),
            ("--gpus-per-node", "gpus per node"),
        ):
            said = said.replace(f"{option}:", f"{field}:", 1)
        raise usage(said.split("] ", 1)[-1]) from None
    return asked
