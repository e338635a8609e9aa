"""The one core that acts on jobs: launch, stop, kill, restart, remove, scale, watch, find — one
module each; callers import what they use from its module (a command imports only its own: `ps`
needs find.py, not launch/scale/watch).

The CLI's commands parse arguments into these calls; the TUI runs them in thread workers. Each
takes an `Agents` (the CLI's Session, the TUI's connection service) and raises GpudeckError with
the line the user sees. No Textual here, no argparse.
"""
