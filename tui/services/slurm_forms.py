"""Which of the hosts offered in the launch form are Slurm hosts, with their hosts.toml defaults
(`[hosts.NAME.slurm]`): the form shows its Slurm fields for those (tui/actions/slurm_form.py)."""

from __future__ import annotations

from ..actions.slurm_form import SlurmForm
from ..hosts_file import HostsFileError, load_hosts


def slurm_forms(hosts: list[str]) -> dict[str, SlurmForm]:
    try:
        entries = load_hosts()  # once for every host offered (each lookup checked the file again)
    except (HostsFileError, OSError):
        return {}  # the form still offers the hosts; a launch says what is wrong
    forms: dict[str, SlurmForm] = {}
    for host in hosts:
        entry = entries.get(host)
        table = entry.extra.get("slurm") if entry is not None else None
        if isinstance(table, dict):
            forms[host] = SlurmForm.of_table(table)
    return forms
