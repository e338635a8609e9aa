"""The host besides its GPUs: identity, CPU load and RAM, read from Linux /proc.

Standard library only. On a system without /proc the values are None rather than errors,
so `hello` and `gpus` still answer.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, List, Optional, Tuple

_PROC = "/proc"


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _os_release() -> Optional[str]:
    text = _read("/etc/os-release") or _read("/usr/lib/os-release")
    for line in (text or "").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "PRETTY_NAME":
            return value.strip().strip("\"'") or None
    return None


def os_text() -> str:
    """E.g. "Debian GNU/Linux 12 (bookworm), Linux 6.1.0-18-amd64 x86_64"."""
    import platform  # here (and below): a supervisor imports this module for its CPU sample only

    kernel = " ".join(p for p in (platform.system(), platform.release(), platform.machine()) if p)
    distro = _os_release()
    return f"{distro}, {kernel}" if distro else kernel


def meminfo_mib() -> Dict[str, Optional[int]]:
    """RAM total/available/used in MiB from /proc/meminfo (kB values); None where unknown."""
    fields: Dict[str, int] = {}
    for line in (_read(os.path.join(_PROC, "meminfo")) or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[key] = int(parts[0])
    total = fields.get("MemTotal")
    avail = fields.get("MemAvailable")
    if total is None:
        total = _sysconf_total_kib()
    used = total - avail if total is not None and avail is not None else None
    return {
        "total_mib": _kib_to_mib(total),
        "available_mib": _kib_to_mib(avail),
        "used_mib": _kib_to_mib(used),
    }


def _sysconf_total_kib() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024
    except (AttributeError, ValueError, OSError):
        return None


def _kib_to_mib(kib: Optional[int]) -> Optional[int]:
    return None if kib is None else kib // 1024


def host_info() -> Dict[str, Any]:
    """What `hello` says about the machine itself."""
    import platform
    import socket

    return {
        "hostname": socket.gethostname(),
        "os": os_text(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "ram_total_mib": meminfo_mib()["total_mib"],
        "logind": logind_report(),
        # When the machine booted (epoch s, host clock): cost accrues from the instance's start.
        "boot_time": boot_time(),
    }


def boot_time() -> Optional[float]:
    text = _read("/proc/stat")
    for line in (text or "").splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return None


LOGIND_CONF_DIRS = (
    "/usr/lib/systemd/logind.conf.d",
    "/run/systemd/logind.conf.d",
    "/etc/systemd/logind.conf.d",
)


def _logind_setting(key: str, root: str = "/") -> Optional[str]:
    """The last value of `key` in logind.conf and its drop-ins, read in systemd's order."""
    files = [os.path.join(root, "etc/systemd/logind.conf")]
    for d in LOGIND_CONF_DIRS:
        try:
            files += sorted(
                os.path.join(root, d.lstrip("/"), n)
                for n in os.listdir(os.path.join(root, d.lstrip("/")))
                if n.endswith(".conf")
            )
        except OSError:
            continue
    value = None
    for path in files:
        for line in (_read(path) or "").splitlines():
            name, sep, rest = line.strip().partition("=")
            if sep and name.strip() == key:
                value = rest.strip()
    return value


def logind_report(root: str = "/", user: Optional[str] = None) -> Dict[str, Any]:
    """Would logind kill this user's processes (and so detached jobs) at logout?

    `KillUserProcesses=yes` without lingering ends every process of the session when the last
    SSH login closes: jobs die with the connection. The fix: `loginctl enable-linger USER`.
    """
    if user is None:
        try:
            import pwd

            user = pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError):
            user = None
    systemd = os.path.isdir(os.path.join(root, "run/systemd/system"))
    raw = _logind_setting("KillUserProcesses", root)
    kill = None if raw is None else raw.lower() in ("yes", "true", "1", "on")
    linger = bool(user) and os.path.exists(os.path.join(root, "var/lib/systemd/linger", user or ""))
    at_risk = bool(systemd and kill and not linger)
    return {
        "systemd": systemd,
        "kill_user_processes": kill,
        "linger": linger,
        "jobs_killed_at_logout": at_risk,
        "advice": (
            "logind kills your processes at logout: run `loginctl enable-linger %s` on this host" % user
        )
        if at_risk
        else None,
    }


def _cpu_times() -> Optional[Tuple[int, int]]:
    """(busy, total) jiffies over all CPUs from the first line of /proc/stat."""
    text = _read(os.path.join(_PROC, "stat"))
    if not text or not text.startswith("cpu "):
        return None
    # user nice system idle iowait irq softirq steal; guest time is already inside user.
    values = [int(v) for v in text.split("\n", 1)[0].split()[1:9]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    total = sum(values)
    return total - idle, total


class CpuMeter:
    """CPU utilisation between calls; the caller keeps one so each reading is a delta.

    Readings closer together than ~0.1 s of CPU time give the previous value and keep the
    old baseline: a few jiffies make a noisy percentage, and several clients may ask at once.
    """

    MIN_JIFFIES_PER_CPU = 10  # 0.1 s at the usual USER_HZ of 100

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._base = _cpu_times()
        self._util: Optional[float] = None

    def util(self) -> Optional[float]:
        """Percent busy since the previous reading (or construction); None if unmeasurable."""
        now = _cpu_times()
        min_delta = self.MIN_JIFFIES_PER_CPU * (os.cpu_count() or 1)
        with self._lock:
            base = self._base
            if now is None or base is None:
                self._base = now
                return None
            if now[1] - base[1] < min_delta:
                return self._util
            self._base = now
            self._util = round(100.0 * (now[0] - base[0]) / (now[1] - base[1]), 1)
            return self._util


def load_average() -> Optional[List[float]]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def cpu_ram_sample(meter: Optional[CpuMeter] = None) -> Dict[str, Any]:
    """`{"cpu": {util, load, count}, "ram": {used_mib, total_mib, available_mib}}`.

    Without a meter, util is None: a single /proc/stat reading says nothing about now.
    """
    return {
        "cpu": {
            "util": meter.util() if meter is not None else None,
            "load": load_average(),
            "count": os.cpu_count(),
        },
        "ram": meminfo_mib(),
    }


def proc_uid(pid: int) -> Optional[int]:
    """Real uid of a process from /proc/<pid>/status, None if gone or unreadable."""
    for line in (_read(os.path.join(_PROC, str(pid), "status")) or "").splitlines():
        if line.startswith("Uid:"):
            parts = line.split()
            return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    return None


def proc_user(pid: int) -> Optional[str]:
    """Login name owning a process; the bare uid when it has no passwd entry; None if unknown.

    NVML reports host pids: inside a container with its own pid namespace they may not
    exist here, and then the user is unknown.
    """
    uid = proc_uid(pid)
    if uid is None:
        return None
    try:
        import pwd  # Unix only; lazy so the module imports anywhere

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return str(uid)
