"""gpudeck's widgets: they draw the fleet model and never do IO themselves (that is tui.live's,
run in thread workers)."""
