"""Bringing a job's code, data and Python environment to the host, as the job's first output.

The supervisor's shell script runs two steps inside the job's own process tree (so stop, kill,
adoption and `logs -f` cover them as they cover the command): `prepare files` before the setup lines
(the work dir from the code snapshot, then the data), and `prepare env` after them (the job's python
is known only once its setup has run). A step that fails prints one last line `gpudeck: <cause>` and
exits PREPARE_FAILED: the job fails with that cause.
"""

PREPARE_FAILED = 97  # also a failed setup line's status: both end in a `gpudeck: …` line
CAUSE_PREFIX = "gpudeck: "
