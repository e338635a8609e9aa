"""What the Footer shows when its keys do not all fit a line (issue 36, finding 8): shorter labels
when compact, then the least needed keys left out, never `q ? t`. The Footer scrolled or cut its
end instead, so at 120 columns the jobs tab lost `/ o a 1 2 3` and the job view `L e x`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from textual.binding import ActiveBinding, Binding

FOOTER_FIRST = ("quit", "help", "next_theme")
# Compact labels: the Footer's words, shorter; the `?` help and the palette keep the long ones.
SHORT = {
    "next_theme": "Theme",
    "new_job": "New",
    "loss_log_scale": "Log y",
    "loss_x_axis": "x axis",
    "clear_filter": "Clear",
    "scale_up": "Grow",
    "scale_down": "Shrink",
    "toggle_ended": "Ended",
    "accept_proposal": "Accept",
    "dismiss_proposal": "Dismiss",
}
# Kept longest when the line is full: the last named is left out first, and a key not named here
# before any named one.
KEEP = (
    "quit",
    "help",
    "next_theme",
    "back",
    "open_job",
    "show_fleet",
    "show_jobs",
    "show_cloud",
    "stop_job",
    "kill_job",
    "filter_jobs",
    "sort_jobs",
    "toggle_ended",
    "job_log",
    "job_procs",
    "gpu_procs",
    "new_job",
    "command_line",
    "toggle_follow",
    "loss_log_scale",
    "loss_smoothing",
    "loss_x_axis",
    "accept_proposal",
    "dismiss_proposal",
    "restart_job",
    "scale_up",
    "scale_down",
    "reverse_jobs",
    "copy_line",
)
PALETTE_HINT = 12  # columns of the "^p palette" hint, docked right where it is shown


def key_width(display: str, description: str, compact: bool) -> int:
    """Columns one FooterKey takes, its gap included (measured on Textual 8.2's Footer)."""
    return len(display) + len(description) + (2 if compact else 3)


def fit(
    bindings: dict[str, ActiveBinding],
    width: int,
    compact: bool,
    palette: bool,
    display: Callable[[Binding], str],
) -> dict[str, ActiveBinding]:
    """`bindings` with short labels when compact, and the least needed shown ones hidden (show=False:
    still keys, still in the palette) until the shown ones fit `width` columns."""
    out: dict[str, ActiveBinding] = {}
    for key, active in bindings.items():
        b = active.binding
        if compact and b.show and b.id in SHORT:
            active = active._replace(binding=replace(b, description=SHORT[b.id]))
        out[key] = active
    shown: dict[str, str] = {}  # action → key: the Footer shows the first binding of each action
    for key, active in out.items():
        if active.binding.show:
            shown.setdefault(active.binding.action, key)
    room = width - (PALETTE_HINT if palette else 0)
    used = sum(
        key_width(display(out[k].binding), out[k].binding.description, compact) for k in shown.values()
    )
    rank = {name: i for i, name in enumerate(KEEP)}
    by_need = sorted(shown.values(), key=lambda k: rank.get(out[k].binding.id or "", len(KEEP)), reverse=True)
    for key in by_need:
        if used <= room:
            break
        b = out[key].binding
        if b.id in FOOTER_FIRST:
            break
        used -= key_width(display(b), b.description, compact)
        out[key] = out[key]._replace(binding=replace(b, show=False))
    return out
