"""One host in the fleet view: its connection state and, per GPU, utilization and memory bars,
temperature, power, a utilization sparkline and the processes on it (with their gpudeck job); in
the wide layout (widgets/wide.py) also memory, and where the width allows power and temperature,
sparklines. A host without NVIDIA GPUs says why and shows CPU and RAM instead."""

from __future__ import annotations

from textual.content import Content

from ..fleet import Fleet, GpuSample, HostModel
from ..fleet.cluster import show_lines
from ..fleet.gpu_trail import GpuTrail
from ..fleet.values import finite
from ..format import duration
from .gauges import HOT_C, bar, gib, pct, power, sparkline, temperature
from .steady_static import SteadyStatic
from .wide import is_wide

STALE_AFTER = 5.0  # seconds without data before the panel says how old it is
STATUS_STYLE = {
    "connected": "$success",
    "connecting": "$secondary",
    "reconnecting": "$warning",
    "unreachable": "$error",
}


def _ages(host: HostModel, now: float) -> tuple[str | None, str | None]:
    """The title's clock-dependent words: how long it has been down, how old its data is."""
    down = (
        duration(now - host.since)
        if host.status in ("reconnecting", "unreachable") and host.reason and host.since is not None
        else None
    )
    stale = host.staleness(now)
    return down, duration(stale) if stale is not None and stale > STALE_AFTER else None


def _title(host: HostModel, now: float, width: int = 10_000) -> Content:
    """The host's state and facts; the facts that do not fit the width are left out, last first."""
    hello = host.hello
    facts = [str(hello.get("hostname") or "")]
    if hello.get("cpu_count"):
        facts.append(f"{hello['cpu_count']} CPUs")
    ram = finite(hello.get("ram_total_mib"))
    if ram:
        facts.append(f"{ram / 1024:.0f} GiB RAM")
    gpu = hello.get("gpu")
    if isinstance(gpu, dict) and gpu.get("driver_version"):
        facts.append(f"driver {gpu['driver_version']} CUDA {gpu.get('cuda_version') or '?'}")
    parts: list[tuple[str, str] | Content] = [
        ("● ", STATUS_STYLE.get(host.status, "")),
        (host.name, "bold"),
        ("  ", ""),
        (host.status, STATUS_STYLE.get(host.status, "")),
    ]
    down, stale = _ages(host, now)
    if host.status in ("reconnecting", "unreachable") and host.reason:
        parts.append((f": {host.reason}", "$text-muted"))
        if down is not None:
            parts.append((f" (for {down})", "$text-muted"))
    if stale is not None:
        parts.append((f"  data {stale} old", "$warning"))
    facts = [f for f in facts if f]
    head = Content.assemble(*parts)
    while facts and head.cell_length + 2 + len(" · ".join(facts)) > width:
        facts.pop()
    if facts:
        return Content.assemble(head, ("  " + " · ".join(facts), "$text-muted"))
    return head


WIDE_SPARK = (12, 30)  # each wide sparkline's cells, at least and at most
FOUR_FROM = 20  # four sparklines only if each gets this many cells; else utilization and memory
PROCS_ROOM = 40  # cells left for the processes after the wide sparklines
LABEL = 7  # a sparkline's label and the gap before it ("  mem ")
TWO_LINE_FROM = 84  # the two-line GPU row's first line needs this many cells; narrower: one line each


def _wide_sparks(
    host: HostModel, g: GpuSample, values: list[float], width: int
) -> list[tuple[str, str] | Content]:
    """util and memory sparklines, and power and temperature ones where the panel is wide enough."""
    trail = host.trails.get(g.index) or GpuTrail()
    room = width - PROCS_ROOM - 4  # after the indent, before the processes
    four = room // 4 - LABEL >= FOUR_FROM
    w = max(WIDE_SPARK[0], min(WIDE_SPARK[1], room // (4 if four else 2) - LABEL))
    parts: list[tuple[str, str] | Content] = [
        ("util ", "$text-muted"),
        sparkline(values, w),
        ("  mem ", "$text-muted"),
        sparkline(trail.mem_pct, w, style="$spark-mem"),
    ]
    if four:
        power_w = trail.power_w
        parts += [
            ("  pwr ", "$text-muted"),
            sparkline(
                power_w,
                w,
                top=g.power_limit_w or max(power_w, default=0.0),
                style="$spark-power",
                over=g.power_limit_w,
                over_style="$power-over",
            ),
            ("  °C ", "$text-muted"),
            # HOT_C and up is hot, as temperature() says; readings are whole degrees
            sparkline(trail.temp_c, w, style="$spark-temp", over=HOT_C - 0.5, over_style="$gpu-hot"),
        ]
    return parts


def _util_trail(host: HostModel, g: GpuSample) -> list[float]:
    """The GPU's recent utilization readings, for its sparkline (none before its first sample)."""
    series = host.util_series.get(g.index)
    return [y for _, y in series.points()] if series is not None else []


def _compact_gpu_line(host: HostModel, g: GpuSample, fleet: Fleet, width: int) -> Content:
    """One line per GPU where the two-line row would wrap (80 columns: 24 GPUs in view, not 6):
    index, utilization, memory, temperature, power; then the job and a sparkline in what is left."""
    head = Content.assemble(
        (f"{g.index:>2} ", "bold"),
        bar(g.util, 8),
        f" {pct(g.util)} mem ",
        bar(g.mem_pct, 5),
        f" {gib(g.mem_used_mib)}/{gib(g.mem_total_mib)}G ",
        temperature(g.temp_c),
        " ",
        power(g.power_w, g.power_limit_w) if width >= 76 or g.power_w is None else f"{g.power_w:.0f}W",
    )
    job = fleet.job_for_gpu(host.name, g.uuid)
    tag = Content.styled(f" {job.name or job.id}"[:20], "$accent") if job is not None else Content("")
    if not g.processes:
        tag = Content.styled(" idle", "$text-muted")
    flagged = _health(g)  # before the sparkline: a full line must not cut it off
    room = width - head.cell_length - tag.cell_length - flagged.cell_length - 1
    values = _util_trail(host, g)
    spark = Content.assemble(" ", sparkline(values, room)) if room >= 6 else Content("")
    return Content.assemble(head, flagged, spark, tag).truncate(width)


def _health(g: GpuSample) -> Content:
    """A GPU with new errors (XID events, uncorrected ECC) says so in red on its line."""
    return Content.styled(f" ⚠ {g.health}", "$error") if g.health else Content("")


def _gpu_lines(
    host: HostModel, g: GpuSample, fleet: Fleet, spark_w: int, wide: bool = False
) -> list[Content]:
    name = (g.name or "GPU").replace("NVIDIA ", "")[:14]
    line1 = Content.assemble(
        (f" {g.index:>2} {name:<14} ", "bold"),
        bar(g.util, 12),
        f" {pct(g.util)}  mem ",
        bar(g.mem_pct, 10),
        f" {gib(g.mem_used_mib)}/{gib(g.mem_total_mib)}G  ",
        temperature(g.temp_c),
        "  ",
        power(g.power_w, g.power_limit_w),
        _health(g),
    )
    values = _util_trail(host, g)
    procs: list[tuple[str, str] | str] = []
    job = fleet.job_for_gpu(host.name, g.uuid)
    for p in g.processes[:4]:
        procs.append(f" {p.pid} {p.user or '?'} {gib(p.mem_mib)}G")
        if job is not None:
            procs.append((f" [{job.name or job.id}]", "$accent"))
    if len(g.processes) > 4:
        procs.append(f" +{len(g.processes) - 4} more")
    sparks = _wide_sparks(host, g, values, spark_w) if wide else [sparkline(values, spark_w)]
    line2 = Content.assemble("    ", *sparks, "  ", *(procs or [("no processes", "$text-muted")]))
    return [line1, line2]


def _cpu_lines(host: HostModel, spark_w: int) -> list[Content]:
    cpu = host.cpu if isinstance(host.cpu, dict) else {}
    util = finite(cpu.get("util")) if cpu else finite(host.cpu)
    ram = host.ram if isinstance(host.ram, dict) else {}
    used, total = finite(ram.get("used_mib")), finite(ram.get("total_mib"))
    ram_pct = 100.0 * used / total if used is not None and total else None
    load = cpu.get("load")
    load_text = (
        " ".join(f"{v:.2f}" for v in load[:3] if isinstance(v, (int, float)))
        if isinstance(load, list)
        else "—"
    )
    values = [y for _, y in host.cpu_series.points()]
    return [
        Content.styled(f"    {host.no_gpu_reason or 'no NVIDIA GPU'}", "$text-muted"),
        Content.assemble("    CPU  ", bar(util, 20), f" {pct(util)}  load {load_text}"),
        Content.assemble("    RAM  ", bar(ram_pct, 20, "$accent"), f" {gib(used)}/{gib(total)} GiB"),
        Content.assemble("    ", sparkline(values, spark_w)),
    ]


def render_host(host: HostModel, fleet: Fleet, now: float, width: int, wide: bool = False) -> Content:
    return Content("\n").join(host_lines(host, fleet, now, width, wide))


def host_lines(host: HostModel, fleet: Fleet, now: float, width: int, wide: bool = False) -> list[Content]:
    """`wide`: the terminal is (widgets/wide.py); `width`: the panel's own cells."""
    spark_w = width if wide else max(8, min(60, width - 40))
    lines = [_title(host, now, width)]
    if host.status == "connecting" and not host.hello:
        lines.append(Content.styled("    connecting…", "$text-muted"))
    elif host.gpu_available and host.gpus and not wide and width < TWO_LINE_FROM:
        lines.extend(_compact_gpu_line(host, g, fleet, width) for g in host.gpus)
    elif host.gpu_available and host.gpus:
        for g in host.gpus:
            lines.extend(_gpu_lines(host, g, fleet, spark_w, wide))
    elif host.gpu_available is not None or host.cpu is not None:
        lines.extend(_cpu_lines(host, max(8, min(spark_w, width - 4))))  # after its 4-cell indent
    if host.slurm is not None:  # a Slurm login node: the cluster at a glance (fleet/cluster.py)
        lines.extend(Content("  " + line) for line in show_lines(host.name, host.slurm)[1:])
    return lines


def panel_key(
    host: HostModel, fleet: Fleet, now: float, width: int, wide: bool = False
) -> tuple[object, ...]:
    """Everything a panel's picture depends on: equal keys draw equal panels, so none is redrawn."""
    jobs = tuple((j.id, j.name) if (j := fleet.job_for_gpu(host.name, g.uuid)) else None for g in host.gpus)
    return host.version, width, wide, _ages(host, now), jobs


class HostPanel(SteadyStatic):
    DEFAULT_CSS = """
    HostPanel { height: auto; padding: 0 1; margin-bottom: 1; }
    """

    def __init__(self, host: str) -> None:
        super().__init__(id=f"host-{_css_id(host)}", classes="host-panel")
        self.host_name = host
        self.drawn: tuple[object, ...] | None = None  # the panel_key of what it shows

    def show(self, fleet: Fleet, now: float) -> bool:
        """Draw the host if anything it shows changed; True if it did. A panel whose height stays
        (same lines, none wrapping) repaints without a relayout of the screen."""
        host = fleet.hosts.get(self.host_name)
        if host is None:
            return False
        width = self.size.width or 80
        wide = is_wide(self.app.size)
        key = panel_key(host, fleet, now, width, wide)
        if key == self.drawn:
            return False
        self.drawn = key
        self.set_class(host.status != "connected", "-down")
        lines = host_lines(host, fleet, now, width, wide)
        # the width too: lines drawn for a width not yet laid out (80 before the first layout) wrapped
        self.show_content(Content("\n").join(lines), width)
        return True


def _css_id(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
