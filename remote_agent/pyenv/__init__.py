"""Cached Python environments: `prepare env` makes the job's requirements into a virtual environment
under `<agent dir>/envs/<key>/`, built once per key and reused by every job that asks the same.

The key hashes (the job's interpreter, the requirement text, the pip options): the interpreter as it
is after the job's setup lines (key.py). A build holds `envs/<key>.lock` (flock) and writes the env in
place -- a venv is not relocatable -- with its `ready` marker last; a directory without that marker is
a build that died and is wiped before the next one (build.py). uv builds when the job's PATH has it,
told pip's own index settings (pipconf.py); else `python -m venv` and pip (installer.py). Their
output is the job's output; a failure's last error line is the job's cause (stream.py).
"""
