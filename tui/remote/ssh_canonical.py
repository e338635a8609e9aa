"""CanonicalizeHostname as ssh(1) does it between its two readings of the config (ssh.c
resolve_canonicalize): the name after the first pass, lower-cased, tried with each CanonicalDomains
suffix; the first that resolves becomes the host name, and the config is read again with it.

Left out: CanonicalizePermittedCNAMEs (following CNAMEs needs the resolver's canonical name, which
the standard library does not give for a name found in /etc/hosts); the name is kept as found.
"""

from __future__ import annotations

import ipaddress
import socket

from .ssh_config_parse import SshConfigError

MODES = {"yes": "yes", "true": "yes", "no": "no", "false": "no", "always": "always"}


def mode(options: dict[str, list[str]]) -> str:
    value = (options.get("canonicalizehostname") or ["no"])[0].lower()
    if value not in MODES:
        raise SshConfigError(f"CanonicalizeHostname {value!r}: use yes, no or always")
    return MODES[value]


def is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _resolves(name: str) -> bool:
    try:
        return bool(socket.getaddrinfo(name, None, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError):
        return False


def _unset(options: dict[str, list[str]], key: str) -> bool:
    value = (options.get(key) or ["none"])[0]
    return value.lower() in ("none", "")  # ProxyJump none is kept as ""


def canonicalize(host: str, options: dict[str, list[str]]) -> str:
    """The canonical name of `host` under the first pass's options (host is already lower-cased)."""
    how = mode(options)
    if how == "no" or is_address(host):
        return host
    direct = _unset(options, "proxycommand") and _unset(options, "proxyjump")
    if not direct and how != "always":
        return host  # a proxy resolves the name: left to it unless `always`
    if host.endswith("."):
        if _resolves(host):
            return host[:-1]
        return _not_found(host, options)
    try:
        max_dots = int((options.get("canonicalizemaxdots") or ["1"])[0])
    except ValueError:
        raise SshConfigError(
            f"CanonicalizeMaxDots {options['canonicalizemaxdots'][0]!r} is not a number"
        ) from None
    if host.count(".") > max_dots:
        return host
    for domain in options.get("canonicaldomains", []):
        if domain.lower() == "none":
            break
        if _resolves(f"{host}.{domain}."):
            return f"{host}.{domain}"
    return _not_found(host, options)


def _not_found(host: str, options: dict[str, list[str]]) -> str:
    if (options.get("canonicalizefallbacklocal") or ["yes"])[0].lower() in ("no", "false"):
        raise SshConfigError(f'Could not resolve host "{host}" (CanonicalizeFallbackLocal no)')
    return host
