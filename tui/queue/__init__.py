"""The queue of jobs waiting for GPUs: kept here (entries.py), started by the controller (start.py), joined by `run --queue` (submit.py)."""
