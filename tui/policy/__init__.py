"""Autoscaling rules (policies.toml): typed rules, one pure engine, the observer and controller around it.

The engine (engine.py) does no IO; what it needs is gathered by observe.py and applied by controller.py
through the same core action as `gpudeck scale` (tui/actions). No Textual here.
"""
