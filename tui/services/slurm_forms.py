"""Which of the hosts offered in the launch form are Slurm hosts, with their hosts.toml defaults
(`[hosts.NAME.slurm]`): the form shows its Slurm fields for those (tui/actions/slurm_form.py)."""

from __future__ import annotations

from ..actions.slurm_form import SlurmForm
from ..hosts_file import HostsFileError, host_fields


def slurm_forms(hosts: list[str]) -> dict[str, SlurmForm]:
    forms: dict[str, SlurmForm] = {}
    for host in hosts:
        try:
            table = host_fields(host).get("slurm")
        except (HostsFileError, OSError):
            continue  # the form still offers the host; its launch says what is wrong
        if isinstance(table, dict):
            forms[host] = SlurmForm.of_table(table)
    return forms
