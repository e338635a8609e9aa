"""remote_agent.probes.sysinfo on this machine's real /proc, and on crafted /proc files for exact numbers."""

from __future__ import annotations

import os
import platform
import pwd
import socket
from pathlib import Path

import pytest

from remote_agent.probes import sysinfo

STAT_1 = "cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n"
# +300 busy (user+system+irq), +100 idle, +0 iowait over 400 jiffies → 75 %.
STAT_2 = "cpu  300 0 150 800 100 50 0 0 0 0\ncpu0 150 0 75 400 50 25 0 0 0 0\n"
MEMINFO = "MemTotal:       16384000 kB\nMemFree:         1000000 kB\nMemAvailable:   12288000 kB\n"


@pytest.fixture
def fake_proc(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(sysinfo, "_PROC", str(tmp_path))
    return tmp_path


def test_host_info_matches_this_machine():
    info = sysinfo.host_info()
    assert info["hostname"] == socket.gethostname()
    assert info["python"] == platform.python_version()
    assert info["cpu_count"] == os.cpu_count()
    total_kib = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
    assert info["ram_total_mib"] == total_kib // 1024 > 0
    assert f"{platform.system()} {platform.release()} {platform.machine()}" in info["os"]
    pretty = [ln for ln in Path("/etc/os-release").read_text().splitlines() if ln.startswith("PRETTY_NAME=")]
    assert info["os"].startswith(pretty[0].split("=", 1)[1].strip('"') + ", ")


def test_cpu_meter_sees_a_busy_loop():
    meter = sysinfo.CpuMeter()
    start = sysinfo._cpu_times()
    # Burn CPU until the kernel has accounted at least a few jiffies.
    while sysinfo._cpu_times()[1] - start[1] < 2 * sysinfo.CpuMeter.MIN_JIFFIES_PER_CPU * (
        os.cpu_count() or 1
    ):
        sum(range(10_000))
    util = meter.util()
    assert util is not None and 0 < util <= 100


def test_cpu_util_from_proc_stat_deltas(fake_proc):
    (fake_proc / "stat").write_text(STAT_1)
    meter = sysinfo.CpuMeter()
    assert meter.util() is None  # no time has passed between the two readings
    (fake_proc / "stat").write_text(STAT_2)
    assert meter.util() == 75.0
    # A reading only a few jiffies later repeats the last value and keeps the baseline ...
    (fake_proc / "stat").write_text("cpu  301 0 150 800 100 50 0 0 0 0\n")
    assert meter.util() == 75.0
    # ... so the next real interval is measured from STAT_2: +100 busy, +300 idle → 25 %.
    (fake_proc / "stat").write_text("cpu  400 0 150 1100 100 50 0 0 0 0\n")
    assert meter.util() == 25.0


def test_sample_shape_and_ram_numbers(fake_proc):
    (fake_proc / "stat").write_text(STAT_1)
    (fake_proc / "meminfo").write_text(MEMINFO)
    meter = sysinfo.CpuMeter()
    (fake_proc / "stat").write_text(STAT_2)
    s = sysinfo.cpu_ram_sample(meter)
    assert s["ram"] == {"total_mib": 16000, "available_mib": 12000, "used_mib": 4000}
    assert s["cpu"]["util"] == 75.0 and s["cpu"]["count"] == os.cpu_count()
    assert len(s["cpu"]["load"]) == 3 and all(x >= 0 for x in s["cpu"]["load"])
    assert sysinfo.cpu_ram_sample()["cpu"]["util"] is None  # no meter, no delta


def test_without_proc_values_degrade_to_none(fake_proc):
    s = sysinfo.cpu_ram_sample(sysinfo.CpuMeter())
    assert s["cpu"]["util"] is None
    assert s["ram"]["available_mib"] is None and s["ram"]["used_mib"] is None
    # Total RAM still comes from sysconf where the OS has it.
    pages = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert s["ram"]["total_mib"] == pages // 1024 // 1024
    assert sysinfo.proc_user(os.getpid()) is None


def test_proc_user():
    assert sysinfo.proc_user(os.getpid()) == pwd.getpwuid(os.getuid()).pw_name
    assert sysinfo.proc_uid(os.getpid()) == os.getuid()
    assert sysinfo.proc_user(999_999_999) is None


def test_proc_user_without_passwd_entry_is_the_uid(fake_proc):
    unused = next(u for u in range(54321, 60000) if u not in {p.pw_uid for p in pwd.getpwall()})
    (fake_proc / "4242").mkdir()
    (fake_proc / "4242" / "status").write_text(
        f"Name:\tpython\nUid:\t{unused}\t{unused}\t{unused}\t{unused}\n"
    )
    assert sysinfo.proc_user(4242) == str(unused)


def _logind_root(
    tmp_path: Path, conf: str, dropin: str | None = None, linger: bool = False, systemd: bool = True
) -> Path:
    (tmp_path / "etc/systemd/logind.conf.d").mkdir(parents=True)
    (tmp_path / "etc/systemd/logind.conf").write_text(conf)
    if dropin is not None:
        (tmp_path / "etc/systemd/logind.conf.d/50-x.conf").write_text(dropin)
    if systemd:
        (tmp_path / "run/systemd/system").mkdir(parents=True)
    if linger:
        (tmp_path / "var/lib/systemd/linger").mkdir(parents=True)
        (tmp_path / "var/lib/systemd/linger/alice").write_text("")
    return tmp_path


def test_logind_kill_user_processes_without_linger_is_reported(tmp_path):
    root = _logind_root(tmp_path, "[Login]\n#KillUserProcesses=no\nKillUserProcesses=yes\n")
    report = sysinfo.logind_report(str(root), "alice")
    assert report["kill_user_processes"] is True and report["linger"] is False
    assert report["jobs_killed_at_logout"] is True
    assert "loginctl enable-linger alice" in report["advice"]


def test_logind_linger_or_dropin_override_makes_it_safe(tmp_path):
    lingering = sysinfo.logind_report(
        str(_logind_root(tmp_path / "a", "KillUserProcesses=yes\n", linger=True)), "alice"
    )
    assert lingering["jobs_killed_at_logout"] is False and lingering["advice"] is None
    overridden = sysinfo.logind_report(
        str(_logind_root(tmp_path / "b", "KillUserProcesses=yes\n", "KillUserProcesses=no\n")), "alice"
    )
    assert overridden["kill_user_processes"] is False and overridden["jobs_killed_at_logout"] is False
    no_systemd = sysinfo.logind_report(
        str(_logind_root(tmp_path / "c", "KillUserProcesses=yes\n", systemd=False)), "alice"
    )
    assert no_systemd["jobs_killed_at_logout"] is False


def test_hello_carries_the_logind_report():
    assert set(sysinfo.host_info()["logind"]) >= {
        "kill_user_processes",
        "linger",
        "jobs_killed_at_logout",
        "advice",
    }
