"""`python -m trainer [options]` trains; `python -m trainer export ...` writes ONNX. See `--help` of each."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    from .stacks import register

    register()  # first: a hang while torch imports can be dumped too (gpudeck dump)
    if argv[:1] == ["export"]:
        from .export import main as export

        return export(argv[1:])
    from .loop import run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
