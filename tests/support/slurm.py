"""A private 3-node Slurm 22.05 cluster for tests (tests/support/slurm/slurm-up.sh: own munge key and
socket, one slurmctld, three slurmd n1..n3 on distinct ports, two fake GPUs each; up in ~1.2 s), and
an sshd as its login node: sessions get SLURM_CONF through sshd's SetEnv, as a cluster's login node
gives its users the cluster's config.

Fixtures (a pytest plugin, tests/conftest.py): `slurm_cluster` and `slurm_login`; a test module
overrides `sshd` with `slurm_login` (tests/test_slurm_hosts.py) so that `ssh_home` logs in there.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tui.remote import deploy

from .sshd import Sshd, free_port, make_sshd

RECIPE = Path(__file__).parent / "slurm"
FAKE_NVML = Path(__file__).resolve().parents[1] / "fakes" / "nvml"


@dataclass
class SlurmCluster:
    base: Path

    @property
    def conf(self) -> Path:
        return self.base / "etc" / "slurm.conf"

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str) -> str:
        """A Slurm client command against this cluster (squeue, scontrol…), its stdout."""
        return subprocess.run(list(argv), env=self.env(), capture_output=True, text=True, check=True).stdout

    def log_lines(self, slurm_job_id: str, limit: int = 40) -> str:
        """What slurmctld and every slurmd logged about one Slurm job: a failed test says why Slurm ended it."""
        marks = (
            f"JobId={slurm_job_id}",
            f"StepId={slurm_job_id}.",
            f"job {slurm_job_id} ",
            f"[{slurm_job_id}.",  # a step's slurmstepd: [34.0] or [34.batch]
        )
        lines = []
        for log in sorted((self.base / "log").glob("slurm*.log")):
            try:
                text = log.read_text(errors="replace")
            except OSError:
                continue
            lines += [f"{log.name}: {line}" for line in text.splitlines() if any(m in line for m in marks)]
        return "\n".join(lines[-limit:])


def _free_ports(count: int) -> int:
    """A first port with `count` free ports from it (slurmctld, then one per slurmd)."""
    for _ in range(50):
        first = free_port()  # below the ephemeral range, as the others
        try:
            for port in range(first, first + count):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return first
    raise RuntimeError("no run of free ports for the Slurm cluster")


def _skip_reason() -> str | None:
    if shutil.which("slurmctld") is None or shutil.which("munged") is None:
        return "slurm-wlm and munge are not installed (apt-get install -y slurm-wlm munge; .ci/run does)"
    if os.geteuid() != 0:
        return "the private Slurm cluster runs its daemons as root (munged as munge)"
    return None


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    # Not under pytest's basetemp (0700): munged runs as `munge` and must reach its dirs below BASE.
    base = Path(tempfile.mkdtemp(prefix="gpudeck-slurm-"))
    os.chmod(base, 0o755)
    env = {**os.environ, "BASE": str(base), "PORT0": str(_free_ports(4))}
    up = subprocess.run(
        ["timeout", "60", "bash", str(RECIPE / "slurm-up.sh")], env=env, capture_output=True, text=True
    )
    cluster = SlurmCluster(base)
    try:
        if up.returncode != 0:
            raise RuntimeError(f"slurm-up.sh failed ({up.returncode}): {(up.stdout + up.stderr)[-2000:]}")
        yield cluster
    finally:
        subprocess.run(["bash", str(RECIPE / "slurm-down.sh")], env=env, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_login(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """The cluster's login node: an sshd whose sessions have SLURM_CONF (and the usual private HOME)."""
    server = login_node(slurm_cluster, tmp_path_factory.mktemp("slurm-login"))
    yield server
    server.stop()


def login_node(cluster: SlurmCluster, root: Path, **env: str) -> Sshd:
    """A started login node of `cluster`; `env`: more variables its sessions get (and so the jobs
    they submit: sbatch exports the submitter's environment), each a value SetEnv takes unquoted."""
    server = make_sshd(root)
    server.stop()
    more = "".join(f" {k}={v}" for k, v in env.items())
    server.extra = [
        f"SetEnv HOME={server.remote_home} GPUDECK_TEST_SSHD={server.port} SLURM_CONF={cluster.conf}{more}"
    ]
    server.start()
    return server


def gpu_login_node(cluster: SlurmCluster, root: Path, utils: tuple[int, ...]) -> Sshd:
    """A login node whose jobs' compute nodes each have GPUs of the fake NVML, one per `utils`
    (their busy %): UUIDs `GPU-<node>-<i>`, own per node. The zipapp must carry the fake pynvml
    (fixture `fake_nvml_bundled`); sbatch exports the file's name to every node."""
    gpus = root / "gpus.json"
    gpus.write_text(json.dumps([{"uuid": f"GPU-{{node}}-{i}", "util": u} for i, u in enumerate(utils)]))
    os.chmod(root, 0o755)
    return login_node(cluster, root, PYNVML_FAKE_FILE=str(gpus))


@pytest.fixture
def fake_nvml_bundled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent zipapp (built in this process and by each CLI call) carries the fake pynvml."""
    monkeypatch.syspath_prepend(str(FAKE_NVML))
    monkeypatch.delitem(sys.modules, "pynvml", raising=False)  # find_spec returns a loaded module's
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_NVML), os.environ.get("PYTHONPATH", "")]))
    # This process builds its zipapp once: one an earlier test built holds the real pynvml, and the
    # app deploying it beside the CLI's would collect the CLI's, which a queued job still names.
    monkeypatch.setattr(deploy, "_local_build", None)
