"""Uploads the agent over exec channels, for a server without the sftp subsystem (an sshd with no
`Subsystem sftp` line, a dropbear without sftp-server): ssh works there, so gpudeck must too.

The host's own python (already probed, >= 3.8) runs a constant script; every value is a positional
argument and the command line is shlex-quoted by the runner. The result is what the SFTP path makes:
the agent dir and `agents/` private (0700, missing parents too), the zipapp written 0600 under a
temporary name and renamed into place, nothing sent when that version is already there.

The zipapp travels on stdin behind 64 KiB of newlines and a header line with a nonce: a login shell's
startup file that reads a line of stdin (README: allowed) eats padding, not the agent. The script
checks the size and SHA-256 before the rename, so a damaged copy never becomes the agent.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from .one_line import python_one_line

UPLOAD_TIMEOUT = 120.0  # seconds for the put: ~200 KB, even over a slow link
PADDING = b"\n" * 65536

# (argv, bytes for its stdin or None) -> (exit status, stdout, stderr)
Run = Callable[[list[str], "bytes | None"], tuple[int, str, str]]

# argv: check|put, agent dir as given (`~` is the login directory, as sftp has it), file name,
# size, sha256, nonce. Prints one line: GPUDECK-UP <json [root, target, there before]> or
# GPUDECK-UP-ERR <why>. `put` reads all of stdin first, so the sender never writes into a closed channel.
_SCRIPT = r"""
import hashlib, json, os, pwd, stat, sys
mode, spec, name, size, digest, nonce = sys.argv[1:7]
def fail(why):
    sys.stdout.write("\nGPUDECK-UP-ERR %s\n" % why)
    sys.exit(3)
try:
    home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
except KeyError:
    home = os.path.realpath(".")
if spec == "~":
    root = home
elif spec.startswith("~/"):
    root = os.path.join(home, spec[2:])
else:
    root = os.path.join(home, spec)
def private_dir(path, fix):
    if not os.path.lexists(path):
        parent = os.path.dirname(path.rstrip("/"))
        if parent and parent != path and not os.path.lexists(parent):
            private_dir(parent, False)
        try:
            os.mkdir(path, 0o700)
            os.chmod(path, 0o700)
        except FileExistsError:
            pass
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        fail("%s exists and is not a directory" % path)
    if fix and st.st_mode & 0o077:
        os.chmod(path, 0o700)
try:
    private_dir(root, True)
    agents = os.path.join(root, "agents")
    private_dir(agents, True)
    target = os.path.join(agents, name)
    data = sys.stdin.buffer.read() if mode == "put" else b""
    if os.path.exists(target) or mode == "check":
        sys.stdout.write("\nGPUDECK-UP %s\n" % json.dumps([root, target, os.path.exists(target)]))
        sys.exit(0)
    header = ("GPUDECK-UPLOAD %s\n" % nonce).encode()
    at = data.find(header)
    body = data[at + len(header):at + len(header) + int(size)] if at >= 0 else b""
    if len(body) != int(size) or hashlib.sha256(body).hexdigest() != digest:
        fail("the agent arrived incomplete or damaged (%d of %s bytes; does a startup file read stdin?)" % (len(body), size))
    tmp = os.path.join(agents, ".tmp-%s-%s" % (nonce, name))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, target)
    sys.stdout.write("\nGPUDECK-UP %s\n" % json.dumps([root, target, False]))
except OSError as exc:
    fail("%s: %s" % (getattr(exc, "filename", None) or root, exc.strerror or exc))
"""
_ANSWER = re.compile(r"^GPUDECK-UP(-ERR)? (.*)$", re.MULTILINE)


class UploadFailed(Exception):
    """The upload over exec did not happen; the message says why in one line."""


def _answer(status: int, out: str, err: str) -> tuple[str, str, bool]:
    found = _ANSWER.findall(out)  # the last: a startup file's chatter before it may hold anything
    if not found:
        raise UploadFailed(
            f"the upload script printed no answer (exit {status}): {(err or out).strip()[-200:] or 'no output'}"
        )
    failed, text = found[-1]
    if failed:
        raise UploadFailed(text.strip()[:300])
    try:
        root, target, there = json.loads(text)
        return str(root), str(target), bool(there)
    except (ValueError, TypeError):
        raise UploadFailed(f"the upload script's answer is garbled: {text[:200]}") from None


def upload_over_exec(run: Run, python: str, agent_dir: str, local: Path) -> tuple[str, str, bool]:
    """(agent dir, agent path, uploaded), as deploy.upload_agent returns over SFTP."""
    data = local.read_bytes()
    nonce = secrets.token_hex(8)
    argv = [python, "-c", python_one_line(_SCRIPT)]
    tail = [agent_dir, local.name, str(len(data)), hashlib.sha256(data).hexdigest(), nonce]
    root, target, there = _answer(*run([*argv, "check", *tail], None))
    if there:
        return root, target, False
    stdin = PADDING + f"GPUDECK-UPLOAD {nonce}\n".encode() + data
    root, target, there = _answer(*run([*argv, "put", *tail], stdin))
    return root, target, not there  # there already: another client raced us with the same bytes
