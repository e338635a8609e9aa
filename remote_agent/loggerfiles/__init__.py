"""The logger files a framework writes by default (Lightning's lightning_logs/version_N/), found
under a job's work dir and read as its points, with no flag (follow.py)."""
