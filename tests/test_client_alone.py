"""The client installs and runs without torch (#25, finding 20): the README's first command installs
the client alone, says how to get torch's CPU build, and CI checks that a plain install pulls no torch
and no CUDA package (.ci/client_alone); here, the CLI and the agent run in interpreters where torch
cannot be imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Any `import torch` in these interpreters fails, as in a venv that never installed it.
NO_TORCH = "import sys; sys.modules['torch'] = None; "


def test_the_readme_installs_the_client_alone_and_says_how_to_get_torch_for_cpu() -> None:
    readme = (REPO / "README.md").read_text()
    first = re.search(r"```\n(.*?)\n```", readme.split("## Two commands", 1)[1], re.S)
    assert first is not None
    assert (
        "pip install -e . " in first.group(1) + " "
        and "torch" not in first.group(1)
        and "[train]" not in first.group(1)
    )
    assert "pip install torch --index-url https://download.pytorch.org/whl/cpu" in readme
    assert "bash .ci/client_alone" in (REPO / ".ci" / "run").read_text()


def test_the_no_cuda_check_knows_nvml_from_cuda() -> None:
    sys.path.insert(0, str(REPO / ".ci"))
    try:
        from no_cuda import offenders
    finally:
        sys.path.remove(str(REPO / ".ci"))

    def report(*names: str) -> dict:
        return {"install": [{"metadata": {"name": n}} for n in names]}

    assert offenders(report("textual", "nvidia-ml-py", "paramiko")) == []
    assert offenders(report("nvidia-ml-py", "torch", "nvidia-cudnn-cu12", "nvidia_cuda_runtime_cu12")) == [
        "nvidia-cuda-runtime-cu12",
        "nvidia-cudnn-cu12",
        "torch",
    ]


def _run(code: str, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "GPUDECK_HOME": str(home),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        [sys.executable, "-c", NO_TORCH + code, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=100,
    )


def test_the_cli_and_the_agent_start_without_torch(tmp_path: Path) -> None:
    cli = "from tui.cli import run; sys.exit(run(sys.argv[1:]))"
    assert _run(cli, "--help", home=tmp_path).returncode == 0
    ps = _run(cli, "ps", "--json", home=tmp_path)
    assert ps.returncode == 0 and json.loads(ps.stdout) == [], ps.stderr
    agent = _run(
        "import runpy; sys.argv[0] = 'remote_agent'; runpy.run_module('remote_agent', run_name='__main__')",
        "hello",
        "--agent-dir",
        str(tmp_path / "agent"),
        home=tmp_path,
    )
    assert agent.returncode == 0 and "agent_version" in agent.stdout, agent.stderr
