"""Managed jobs: kept here (records.py), brought back by the controller when their host is lost or
taken or they fail (recover.py), started by `run --managed` (submit.py)."""
