"""Puts the agent on a host: probe python3 (>= 3.8, by absolute path), upload the zipapp once per hash
(over SFTP, or over exec channels where the server has no sftp subsystem: exec_upload.py).

Every remote command is a token list through shlex.quote; values travel as positional arguments of
a constant `sh -c` script, never spliced into it. Exit codes of the probe (documented in PROTOCOL.md):
the script prints one marker line, so a chatty `.bashrc` before it is skipped.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import secrets
import shlex
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

import paramiko

from remote_agent.slurm.record import RECORD_NAME
from remote_agent.slurm.script import SCRIPT_NAME

from .. import paths
from ..bundle import build_zipapp
from .exec_upload import UPLOAD_TIMEOUT, UploadFailed, upload_over_exec
from .one_line import python_one_line
from .ssh_connect import Connection

MIN_PYTHON = (3, 8)
PROBE_TIMEOUT = 30.0

# $1: the interpreter asked for. Prints GPUDECK-PY <path> <major> <minor> <micro>, or GPUDECK-NOPY <what exists>,
# each on a line of its own (the echo before it ends any chatter left without a newline). One line, no
# backslash, so any login shell (sh, bash, zsh, fish, tcsh) passes it to `sh -c` intact.
_PROBE = " ".join(
    line.strip()
    for line in """
p=$(command -v -- "$1" 2>/dev/null);
case "$p" in /*) ;; *) p="" ;; esac;
if [ -z "$p" ]; then
  found=$(for c in python3 python python2; do command -v "$c" 2>/dev/null; done);
  echo; echo GPUDECK-NOPY ${found:-nothing}; exit 0;
fi;
v=$("$p" -c 'import sys; sys.stdout.write("%d %d %d" % tuple(sys.version_info[:3]))' 2>&1) || v="broken: $v";
echo; echo "GPUDECK-PY $p $v"
""".strip().splitlines()
)
_MARKER = re.compile(r"GPUDECK-(?:PY|NOPY)\b[^\n]*")
OUTPUT_MAX = 1 << 20  # bytes of a helper's output kept (the tail): a login shell may print without end

# argv: agents dir, the name to keep, a Slurm job's script and record names. Removes *.pyz that no
# live process names in its command line and no Slurm job still to start or still running names in its sbatch script (jobs/<id>/0/): a queued
# job starts its agent days later, and a running one's compute nodes read it from the shared file
# system, where this node's /proc cannot see them. A job is done with it once every node's slurm.json
# holds Slurm's end.
_GC = r"""
import json, os, re, sys, time
d, keep, script_name, record_name = sys.argv[1:5]
used = set()
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            args = open('/proc/%s/cmdline' % pid, 'rb').read().split(b'\0')
        except Exception:
            continue
        used.update(os.path.basename(a.decode('utf-8', 'replace')) for a in args if a.startswith(d.encode()))

def ended(node_dir):
    try:
        return bool(json.load(open(os.path.join(node_dir, record_name))).get('end'))
    except Exception:
        return False  # not submitted yet, or unreadable: it may still start

jobs = os.path.join(os.path.dirname(d), 'jobs')
for job in os.listdir(jobs) if os.path.isdir(jobs) else []:
    try:
        script = open(os.path.join(jobs, job, '0', script_name), 'rb').read()
        nodes = [os.path.join(jobs, job, n) for n in os.listdir(os.path.join(jobs, job))]
    except Exception:
        continue
    if not all(ended(n) for n in nodes if os.path.isdir(n)):
        used.update(os.path.basename(m.decode()) for m in re.findall(rb'[0-9a-f]{16}[.]pyz', script))
for name in os.listdir(d):
    path = os.path.join(d, name)
    old_tmp = name.startswith('.tmp-') and time.time() - os.stat(path).st_mtime > 3600
    if (name.endswith('.pyz') and name != keep and name not in used) or old_tmp:
        os.unlink(path)
        print('GPUDECK-GC ' + name)
"""


class DeployError(Exception):
    """The agent cannot run on this host; the message says what was found."""


@dataclass(frozen=True)
class Deployed:
    python: str  # absolute path on the host
    agent: str  # absolute path of agents/<hash>.pyz
    agent_dir: str  # absolute
    uploaded: bool
    removed: tuple[str, ...] = ()


def run_command(
    conn: Connection, argv: list[str], timeout: float | None = None, stdin: bytes | None = None
) -> tuple[int, str, str]:
    """Run a quoted token list on the host; (exit status, stdout, stderr).

    stdin gets `stdin`'s bytes, if any, and is closed: a login shell's startup file that reads it gets
    EOF instead of hanging the probe. Any paramiko failure becomes a DeployError of one line.
    """
    timeout = PROBE_TIMEOUT if timeout is None else timeout
    try:
        chan = conn.transport.open_session(timeout=timeout)
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise DeployError(
            f"{conn.target.describe()}: the server refused a session channel: {_why(exc)}"
        ) from None
    try:
        chan.settimeout(timeout)
        chan.exec_command(shlex.join(argv))
        if stdin:
            chan.sendall(stdin)
        chan.shutdown_write()
        out, err = bytearray(), bytearray()
        while True:
            chunk = chan.recv(65536)
            if not chunk:
                break
            out += chunk
            del out[:-OUTPUT_MAX]
        while chan.recv_stderr_ready():
            err += chan.recv_stderr(65536)
            del err[:-OUTPUT_MAX]
        return chan.recv_exit_status(), out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    except TimeoutError:
        raise DeployError(
            f"{conn.target.describe()}: {argv[0]} gave no answer within {timeout:.0f} s"
        ) from None
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise DeployError(f"{conn.target.describe()}: running {argv[0]} failed: {_why(exc)}") from None
    finally:
        chan.close()


def _why(exc: BaseException) -> str:
    text = exc.text if isinstance(exc, paramiko.ChannelException) else str(exc)  # its str() is a tuple
    return " ".join(str(text).split())[:200] or type(exc).__name__


def probe_python(conn: Connection, python: str | None) -> str:
    """The interpreter's absolute path, checked to be >= 3.8; DeployError names what was found."""
    wanted = python or "python3"
    status, out, err = run_command(conn, ["sh", "-c", _PROBE, "sh", wanted])
    found: list[str] = _MARKER.findall(out)  # the last one: chatter before it may hold anything
    line = found[-1] if found else None
    if line is None:
        raise DeployError(
            f"python probe failed (exit {status}): {(err or out).strip()[-200:] or 'no output'}"
        )
    tag, _, rest = line.partition(" ")
    if tag == "GPUDECK-NOPY":
        raise DeployError(
            f"no {wanted} on this host (found: {rest.strip()}); install python3 >= 3.8 or give --python PATH"
        )
    path, _, version = rest.partition(" ")
    parts = version.split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise DeployError(f"{path} does not run: {version.strip()[:200]}")
    numbers = tuple(int(p) for p in parts)
    if numbers[:2] < MIN_PYTHON:
        raise DeployError(f"{path} is Python {'.'.join(parts)}; the agent needs >= 3.8 (give --python PATH)")
    return path


_local_build_lock = threading.Lock()
_local_build: Path | None = None


def local_zipapp() -> Path:
    """Build (once per process) the zipapp to ship; its name is the hash of its sources."""
    global _local_build
    with _local_build_lock:
        if _local_build is None or not _local_build.exists():
            _local_build = build_zipapp(paths.ensure_private(paths.data_dir() / "agents"))
        return _local_build


def remote_dir(sftp: paramiko.SFTPClient, agent_dir: str) -> str:
    """The agent dir as an absolute path: `~` is the login directory (where sftp starts)."""
    home: str = sftp.normalize(".")  # paramiko ships no type hints
    if agent_dir == "~":
        return home
    if agent_dir.startswith("~/"):
        return posixpath.join(home, agent_dir[2:])
    return agent_dir if agent_dir.startswith("/") else posixpath.join(home, agent_dir)


def _private_dir(sftp: paramiko.SFTPClient, path: str) -> None:
    try:
        st = sftp.stat(path)
    except FileNotFoundError:
        parent = posixpath.dirname(path.rstrip("/"))
        if parent and parent != path:
            with contextlib.suppress(OSError):
                sftp.stat(parent)
                parent = ""
            if parent:
                _private_dir(sftp, parent)
        sftp.mkdir(path, 0o700)
        st = sftp.stat(path)
    if not stat.S_ISDIR(st.st_mode or 0):
        raise DeployError(f"{path} exists and is not a directory")
    if (st.st_mode or 0) & 0o077:
        sftp.chmod(path, 0o700)


def upload_agent(
    conn: Connection, agent_dir: str, local: Path, python: str | None = None
) -> tuple[str, str, bool]:
    """(agent dir, agent path, uploaded): uploads under a temporary name, then renames into place.
    Over SFTP; over exec channels with `python` where the server has no sftp subsystem."""
    try:
        sftp = conn.transport.open_sftp_client()
    except (paramiko.SSHException, EOFError):
        if python is None or not conn.transport.is_active():
            raise
        sftp = None  # the server refused the subsystem, and the connection is fine
    if sftp is None:
        if python is None:
            raise DeployError("the host offers no SFTP subsystem")

        def run(argv: list[str], data: bytes | None) -> tuple[int, str, str]:
            return run_command(conn, argv, UPLOAD_TIMEOUT if data else None, data)

        return upload_over_exec(run, python, agent_dir, local)
    try:
        root = remote_dir(sftp, agent_dir)
        _private_dir(sftp, root)
        agents = posixpath.join(root, "agents")
        _private_dir(sftp, agents)
        target = posixpath.join(agents, local.name)
        try:
            sftp.stat(target)
            return root, target, False
        except FileNotFoundError:
            pass
        tmp = posixpath.join(agents, f".tmp-{secrets.token_hex(6)}-{local.name}")
        with sftp.open(tmp, "wb") as f:
            sftp.chmod(tmp, 0o600)  # before any byte is in it
            f.set_pipelined(True)
            f.write(local.read_bytes())
        try:
            sftp.posix_rename(tmp, target)  # atomic; another client racing us wrote the same bytes
        except OSError:
            with contextlib.suppress(OSError):
                sftp.remove(tmp)
            raise
        return root, target, True
    finally:
        sftp.close()


def collect_garbage(conn: Connection, python: str, agents_dir: str, keep: str) -> tuple[str, ...]:
    """Remove old agent versions that no live `run`/`serve` process is using."""
    status, out, _ = run_command(
        conn, [python, "-c", python_one_line(_GC), agents_dir, keep, SCRIPT_NAME, RECORD_NAME]
    )
    return (
        tuple(ln.split(None, 1)[1] for ln in out.splitlines() if ln.startswith("GPUDECK-GC "))
        if status == 0
        else ()
    )


def ensure_agent(
    conn: Connection,
    python: str | None,
    agent_dir: str,
    local: Path | None = None,
    interpreter: str | None = None,
) -> Deployed:
    """interpreter: the path an earlier probe found (deploy_memo.py): the probe is skipped."""
    local = local or local_zipapp()
    interpreter = interpreter or probe_python(conn, python)
    try:
        root, agent, uploaded = upload_agent(conn, agent_dir, local, interpreter)
    except (OSError, EOFError, paramiko.SSHException, UploadFailed) as exc:
        raise DeployError(f"cannot upload the agent into {agent_dir}: {_why(exc)}") from None
    removed = collect_garbage(conn, interpreter, posixpath.dirname(agent), local.name) if uploaded else ()
    return Deployed(python=interpreter, agent=agent, agent_dir=root, uploaded=uploaded, removed=removed)
