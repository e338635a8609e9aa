"""`gpudeck help [VERB…]` (its parser: answered by tui/cli.py, which holds the parser) and `gpudeck
completion bash|zsh|fish`: the script that teaches a shell gpudeck's verbs and options (argcomplete:
bash, zsh and fish alike)."""

from __future__ import annotations

import argparse

from ..session import Session

SHELLS = ("bash", "zsh", "fish")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("help", help="help for gpudeck, or for one verb (gpudeck help hosts add)")
    p.add_argument("topic", nargs="*", metavar="VERB", help="a verb, and its action for verbs that have them")
    p = sub.add_parser(
        "completion",
        help="print the shell completion script for bash, zsh or fish",
        description="Print the script that completes gpudeck's verbs and options in your shell; "
        "load it from your shell's completions directory (see the examples).",
    )
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def completion(args: argparse.Namespace, _session: Session) -> int:
    from argcomplete.shell_integration import shellcode

    print(shellcode(["gpudeck"], shell=args.shell))
    return 0
