"""Spot preemption notices: the provider's metadata endpoint (metadata.py), watched while a job runs
(watch.py), and what a notice does to the job (act.py: notice file, capped grace, reason `preempted`)."""
