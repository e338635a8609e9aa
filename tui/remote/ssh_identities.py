"""Which keys to offer a server, and in what order, as ssh does (sshconnect2.c pubkey_prepare):

1. the ssh-agent's keys that an IdentityFile names, in the agent's order (the agent signs, so an
   encrypted key file never needs its passphrase);
2. the agent's other keys, in its order, unless IdentitiesOnly;
3. the identity files the agent does not hold, in config order, loaded from disk.

A server gives up after MaxAuthTries refused keys (6 by default), so the order decides whether the
right key is ever tried. Without any IdentityFile, ssh's default keys are the identity files.
Each key goes with the certificates that certify it (ssh_certs.offers).
"""

from __future__ import annotations

import contextlib
import os
import socket
import warnings
from collections.abc import Callable

import paramiko
from paramiko.pkey import UnknownKeyType

from .ssh_certs import beside, certifies, offers
from .ssh_config import SshTarget, default_identities
from .ssh_pubkey import public_blob

# (what to call it, key to offer, why it cannot be offered): key None means "only report the problem".
Identity = tuple[str, "paramiko.PKey | None", "str | None"]
AskPassphrase = Callable[[str], "str | None"]  # key path → passphrase, or None to skip that key

# Loading an old id_dsa (ssh's default list still names it) warns on stderr on every connect; the key
# is skipped and named in one line instead.
warnings.filterwarnings("ignore", message="SSH DSA keys are deprecated")

# Passphrases the user typed (TUI), kept in memory only, for this process's lifetime.
_passphrases: dict[str, str] = {}


def identities(target: SshTarget, ask: AskPassphrase | None = None) -> list[Identity]:
    """Every key to offer `target`, in ssh's order; the CLI passes no `ask` (it never prompts)."""
    agent = agent_keys(target.identity_agent)
    files = [
        p for p in target.identity_files or default_identities() if p.lower() != "none"
    ]  # `none`: no file
    blobs = {path: public_blob(path) for path in files}
    named = {blob for blob in blobs.values() if blob is not None}

    def names(key: paramiko.PKey) -> bool:  # an agent's certificate counts as the key it certifies
        blob = key.asbytes()
        return blob in named or any(certifies(blob, b) for b in named)

    held = [k for k in agent if names(k)]
    others = [] if target.identities_only else [k for k in agent if not names(k)]
    cert_paths = [*target.certificate_files, *(beside(path) for path in files)]
    out: list[Identity] = []
    for k in held + others:
        out += [(name, key, None) for name, key in offers("ssh-agent", k, cert_paths)]
    in_agent = {k.asbytes() for k in held}
    for path in files:
        if blobs[path] not in in_agent:
            out += _from_file(path, [*target.certificate_files, beside(path)], ask)
    return out


def _from_file(path: str, cert_paths: list[str], ask: AskPassphrase | None) -> list[Identity]:
    """The key file's offers, or one problem naming it; a missing file is skipped, as by ssh."""
    too_open = unprotected(path)
    if too_open:
        return [(path, None, too_open)]
    try:
        return [
            (name, key, None)
            for name, key in offers(path, paramiko.PKey.from_path(path, _secret(path)), cert_paths)
        ]
    except FileNotFoundError:
        return []
    except (paramiko.PasswordRequiredException, TypeError) as exc:
        # PKey.from_path lets cryptography's TypeError through for an encrypted OpenSSH key.
        if isinstance(exc, TypeError) and "password" not in str(exc):
            return [(path, None, f"{path}: {exc}")]
        secret = ask(path) if ask is not None else None  # the TUI asks once; the CLI never does
        if secret is not None:
            try:
                key = paramiko.PKey.from_path(path, secret.encode())
                _passphrases[path] = secret
                return [(name, k, None) for name, k in offers(path, key, cert_paths)]
            except (paramiko.SSHException, ValueError, TypeError):
                pass  # a wrong passphrase: the key is skipped and named below
        return [(path, None, f"{path} is encrypted: load it into ssh-agent (ssh-add {path})")]
    except (paramiko.SSHException, OSError, ValueError, UnknownKeyType) as exc:
        return [(path, None, _unloadable(path, exc))]


def _secret(path: str) -> bytes | None:
    secret = _passphrases.get(path)
    return secret.encode() if secret is not None else None


def agent_keys(where: str | None) -> list[paramiko.PKey]:
    """The keys of the agent IdentityAgent names (None or SSH_AUTH_SOCK: $SSH_AUTH_SOCK; `none`: no
    agent; `$VAR`: the socket that variable names; else a socket path). No agent there is normal."""
    if where is not None and where.lower() == "none":
        return []
    with contextlib.suppress(Exception):
        if where is None or where == "SSH_AUTH_SOCK":
            return list(paramiko.Agent().get_keys())
        path = os.environ.get(where[1:], "") if where.startswith("$") else where
        if not path:
            return []
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(10)
        sock.connect(path)
        agent = paramiko.agent.AgentSSH()
        agent._connect(sock)  # paramiko.Agent() only dials $SSH_AUTH_SOCK; this is its own handshake
        return list(agent.get_keys())
    return []


def _unloadable(path: str, exc: Exception) -> str:
    """Why a key file was skipped, in one short line (cryptography's PEM error carries a URL)."""
    if isinstance(exc, UnknownKeyType):
        return f"{path}: this key type is not supported (ssh no longer accepts it either by default)"
    if isinstance(exc, OSError):
        return f"{path}: {exc.strerror or exc}"
    if isinstance(exc, ValueError) and "PEM" in str(exc):
        return f"{path}: not a private key file"
    return f"{path}: {' '.join(str(exc).split())[:300] or type(exc).__name__}"


def unprotected(path: str) -> str | None:
    """OpenSSH's refusal of a private key that group or others may read (sshkey_perm_ok), in one line.
    Like ssh, only a file the user owns is judged: root reading another user's key is not refused."""
    try:
        st = os.stat(path)
    except OSError:
        return None  # missing: the loader says so (or skips a default key)
    if st.st_uid == os.getuid() and st.st_mode & 0o077:
        return (
            f"WARNING: UNPROTECTED PRIVATE KEY FILE! Permissions {st.st_mode & 0o777:04o} for '{path}' "
            f"are too open. It is required that your private key files are NOT accessible by others. "
            f"This private key will be ignored (chmod 600 {path})"
        )
    return None
