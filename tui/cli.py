"""`gpudeck` command line: docker-like verbs; every failure is one line and a distinct exit code."""

from __future__ import annotations

import argparse
import atexit
import importlib
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, NoReturn

from . import paths, read_only, typeahead
from .cli_help import decorate
from .errors import EXIT_ERROR, EXIT_USAGE, GpudeckError
from .printable import printable
from .quiet_logs import quiet_libraries

if TYPE_CHECKING:  # the session (SSH, agents, the store) is imported when a verb runs, not for --help
    from .session import Session

Handler = Callable[[argparse.Namespace, "Session"], int]

# verb → (its module under tui/commands, the function that runs it). A command imports only its own
# module: importing all of them (actions, cost, policy, cloud…) was most of a `ps`'s start-up.
VERBS: dict[str, tuple[str, str]] = {
    "run": ("run", "run"),
    "sync": ("sync", "run"),
    "gc": ("gc", "run"),
    "ps": ("ps", "run"),
    "queue": ("queue", "run"),
    "inspect": ("ps", "inspect"),
    "logs": ("logs", "run"),
    "pull": ("pull", "run"),
    "metrics": ("metrics", "run"),
    "stop": ("control", "stop"),
    "kill": ("control", "kill"),
    "dump": ("dump", "run"),
    "restart": ("control", "restart"),
    "scale": ("scale", "run"),
    "rm": ("control", "rm"),
    "autostop": ("control", "autostop"),
    "hosts": ("hosts", "run"),
    "cost": ("cost", "run"),
    "prices": ("prices", "run"),
    "policy": ("policy", "run"),
    "cloud": ("cloud", "run"),
    "watch": ("watch", "run"),
    "forward": ("forward", "run"),
    "ssh": ("shell_on", "run"),
    "export": ("export", "run"),
    "help": ("shell", "add_parser"),  # answered here (help_verb): it needs the parser
    "completion": ("shell", "completion"),
}
# Verbs that read none of your files: help must work while config.toml or hosts.toml is broken.
FILELESS = ("help", "completion")
# The order `gpudeck --help` lists them in.
MODULES = (
    "run",
    "sync",
    "gc",
    "watch",
    "ps",
    "queue",
    "logs",
    "pull",
    "forward",
    "shell_on",
    "metrics",
    "dump",
    "control",
    "scale",
    "hosts",
    "cost",
    "prices",
    "policy",
    "cloud",
    "export",
    "shell",
)


def _command(name: str) -> ModuleType:
    return importlib.import_module(f".commands.{name}", __package__)


def _lazy(module: str, function: str) -> Handler:
    def handler(args: argparse.Namespace, session: Session) -> int:
        run: Handler = getattr(_command(module), function)
        return run(args, session)

    return handler


HANDLERS: dict[str, Handler] = {verb: _lazy(module, function) for verb, (module, function) in VERBS.items()}


class UsageError(GpudeckError):
    """A usage error: its line already starts with the command (`gpudeck inspect: …`), printed as is."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class _Parser(argparse.ArgumentParser):
    _sized = False  # True while help or usage is formatted: only then is the terminal's width asked

    def error(self, message: str) -> NoReturn:
        # argparse's own two-line usage dump, shortened to the one line that matters. `prog` is
        # "gpudeck" or "gpudeck inspect": the line names gpudeck once.
        raise UsageError(f"{self.prog}: {message}")

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse makes a formatter at each add_argument only to check its metavar, and a
        formatter of no given width asks shutil for the terminal's (shutil loads bz2, lzma and
        zlib: ~2 ms of every command's start). The check's formatter gets a width it never uses."""
        if self._sized:
            return super()._get_formatter()
        return self.formatter_class(prog=self.prog, width=80)  # type: ignore[call-arg]  # (HelpFormatter takes it)

    def format_help(self) -> str:
        return self._with_width(super().format_help)

    def format_usage(self) -> str:
        return self._with_width(super().format_usage)

    def _with_width(self, format_text: Callable[[], str]) -> str:
        self._sized = True
        try:
            return format_text()
        finally:
            self._sized = False


def help_verb(args: argparse.Namespace, _session: Session) -> int:
    """`gpudeck help [VERB [ACTION]]`: that parser's --help."""
    parser = build_parser(args.topic[0] if args.topic else None)
    for word in args.topic:
        choices = next(
            (a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None
        )
        if not choices or word not in choices:
            known = ", ".join(choices or ())
            raise UsageError(f"gpudeck help: no verb {word!r}{f' (known: {known})' if known else ''}")
        parser = choices[word]
    parser.print_help()
    return 0


HANDLERS["help"] = help_verb


DESCRIPTION = "GPU training cockpit: run, watch and stop jobs on your GPU hosts."
EPILOG = (
    "Run gpudeck with no command to open the terminal UI (the TUI): every host, job, GPU and "
    "cost live. `gpudeck COMMAND --help` explains each command."
)


def build_parser(verb: str | None = None, summaries_only: bool = False) -> argparse.ArgumentParser:
    """The whole command line; with a known verb, only that verb's subcommands (and modules);
    `summaries_only` (no verb): every verb by its one line, for `gpudeck --help`."""
    parser = _Parser(prog="gpudeck", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action=_Version, nargs=0, help="print gpudeck's version")
    # Before the verb: they choose where every agent session of this run goes (or comes from).
    tape = parser.add_mutually_exclusive_group()
    tape.add_argument(
        "--record", metavar="FILE", help="write every agent session to FILE (JSON lines; env values hidden)"
    )
    tape.add_argument(
        "--replay", metavar="FILE", help="play a recording back instead of talking to agents (read-only)"
    )
    parser.add_argument(
        "--read-only",
        action="store_true",
        help=f"watch only: the TUI refuses every action, and every verb that writes anything is "
        f"refused ({read_only.refused_list()})",
    )
    parser.add_argument(
        "--replay-speed",
        type=float,
        default=1.0,
        metavar="X",
        help="replay journal events X times faster (0: all at once; default 1)",
    )
    sub = parser.add_subparsers(dest="verb", metavar="COMMAND", parser_class=_Parser)
    if verb is None and summaries_only:  # `gpudeck --help`: the verbs' one-line helps, no module
        for name, line in SUMMARIES.items():
            sub.add_parser(name, help=line)
        return parser
    for name in (VERBS[verb][0],) if verb in VERBS else MODULES:
        _command(name).add_parser(sub)
    decorate(parser)
    return parser


# `gpudeck --help` lists these without importing a verb's module (most of its start-up time);
# tests/test_cli_help.py checks they are what each module's add_parser says.
SUMMARIES: dict[str, str] = {
    "run": "launch a command as a detached job",
    "sync": "send a directory's snapshot to hosts (what `run --sync` does first)",
    "gc": "remove old code snapshots, environments and cached data from hosts (never a live job's)",
    "watch": "follow the log file of a run gpudeck did not start (tmux, nohup, a scheduler)",
    "ps": "list jobs (live ones; --all for every job)",
    "inspect": "one job in full: state, cause, last output lines",
    "queue": "jobs waiting for GPUs (run --queue): order, position and why",
    "logs": "print a job's output (-f: follow until it ends)",
    "pull": "copy a file or directory of a job's working directory here (again: only what changed)",
    "forward": "a port of a job's node here, over SSH (TensorBoard, Jupyter, a server)",
    "ssh": "a shell (or a command) on a job's node, in its working directory",
    "metrics": "print a job's metric points (loss, step, lr…)",
    "stop": "stop gracefully: stop signal, then SIGKILL after the grace period",
    "kill": "SIGKILL every process of the job now",
    "dump": "the stacks of a job's Python processes on every node (a hung job)",
    "restart": "stop the job if live, then launch it again as a new job",
    "rm": "delete an ended job's files on its hosts",
    "autostop": "pause or resume a job's idle stop",
    "scale": "resize a job: stop (checkpoint), relaunch on the new node count, resume",
    "hosts": "list hosts (reachable or why not, agent, GPUs, clock); add, rm, set, trust",
    "cost": "burn, accrued, projected and idle cost per host and job",
    "prices": "known prices: each host's, and the shipped catalog, with sources",
    "policy": "autoscaling rules (policies.toml): what they decide, or carry them out",
    "cloud": "cloud GPU instances (AWS, Aliyun): ls, idle, stop, start, terminate, launch",
    "export": "serve /metrics for Prometheus, or write a job's TensorBoard event files",
    "help": "help for gpudeck, or for one verb (gpudeck help hosts add)",
    "completion": "print the shell completion script for bash, zsh or fish",
}


class _Version(argparse.Action):
    """--version, looked up only when asked (importlib.metadata is not free at every start)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"gpudeck {version()}")
        parser.exit()


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("gpudeck")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """parse_args, but extra words are refused naming the verb they followed (`gpudeck ps: …`)."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        words = [
            w
            for w in (getattr(args, "verb", None), getattr(args, f"{getattr(args, 'verb', '')}_verb", None))
            if w
        ]
        raise UsageError(f"{' '.join(['gpudeck', *words])}: unrecognized arguments: {' '.join(extra)}")
    return args


_GLOBAL_WITH_VALUE = ("--record", "--replay", "--replay-speed")


def verb_of(argv: list[str]) -> str | None:
    """The verb argv names (the first word after the global options), or None (help, the TUI)."""
    args = iter(argv)
    for arg in args:
        if arg in _GLOBAL_WITH_VALUE:
            next(args, None)
        elif not arg.startswith("-"):
            return arg
        elif arg in ("-h", "--help"):
            return None
    return None


def empty_option(argv: list[str]) -> str | None:
    """The option given an empty value (`--workdir ''`, `--since=`), or None. An empty value is
    never a default in disguise: it is refused. Arguments after `--` are the command's own."""
    previous = ""
    for arg in argv:
        if arg == "--":
            return None
        if arg.startswith("-") and arg.endswith("=") and len(arg) > 2:
            return arg[:-1]
        if arg == "" and previous.startswith("-") and len(previous) > 1 and "=" not in previous:
            return previous
        previous = arg
    return None


def main(argv: list[str] | None = None) -> None:
    if "_ARGCOMPLETE" in os.environ:  # the shell asks for completions (`gpudeck completion SHELL` set it up)
        import argcomplete

        argcomplete.autocomplete(build_parser())  # answers and exits
    sys.exit(run(sys.argv[1:] if argv is None else argv))


def asks_top_help(argv: list[str]) -> bool:
    """`gpudeck --help` / `-h` / `--version` (before any verb): answered from SUMMARIES alone."""
    return verb_of(argv) is None and any(a in ("-h", "--help", "--version") for a in argv)


def run(argv: list[str]) -> int:
    if verb_of(argv) is None and not asks_top_help(argv):  # the TUI: keys typed while it loads are
        atexit.register(typeahead.release, typeahead.hold())  # not echoed, then dropped (tui/typeahead.py)
    if asks_top_help(argv):
        try:
            parse(build_parser(summaries_only=True), argv)
        except UsageError as exc:
            sys.stderr.write(printable(str(exc)) + "\n")
            return exc.code
        return 0  # (argparse printed the help and exited)
    from . import session as session_mod
    from .remote import hostkey_errors
    from .session import Session

    quiet_libraries()
    session = Session()
    try:
        args = parse(build_parser(verb_of(argv)), argv)
        _use_tape(args)
        if args.verb is None:
            from .app import main as app_main  # here: other verbs stay fast and Textual-free

            return app_main(replay=args.replay, read_only=args.read_only)  # 1 after a crash
        sub_verb = getattr(args, f"{args.verb}_verb", None)
        empty = empty_option(argv)
        if empty is not None:
            raise UsageError(
                f"gpudeck {' '.join(filter(None, (args.verb, sub_verb)))}: {empty}: an empty value "
                f"(leave the option out for its default)"
            )
        if args.read_only and read_only.refuses(args.verb, sub_verb):
            raise UsageError(f"gpudeck {' '.join(filter(None, (args.verb, sub_verb)))}: refused: --read-only")
        # config.toml is read before anything is done, for every verb: a broken file stops the
        # command with its one line, instead of each host failing alone ("unreachable", exit 0).
        if args.verb not in FILELESS:
            _ = session.settings
            session.hosts()  # and hosts.toml, for the same reason
        hostkey_errors.notice_sink = lambda text: print(
            f"gpudeck: notice: {printable(text)}", file=sys.stderr
        )
        return HANDLERS[args.verb](args, session)
    except GpudeckError as exc:
        # One write: a reconnecting client's status line (another thread) must not land inside it.
        # printable: a message may quote a hostile name, target or remote answer.
        sys.stderr.write(printable(str(exc) if isinstance(exc, UsageError) else f"gpudeck: {exc}") + "\n")
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (
        OSError
    ) as exc:  # the machine refused (a file, a disk, a permission): its cause, not "internal error"
        print(
            printable(f"gpudeck: {f'{exc.filename}: ' if exc.filename else ''}{exc.strerror or exc}"),
            file=sys.stderr,
        )
        return EXIT_ERROR
    except Exception as exc:  # a bug still gets one line, not a traceback
        if _is_sqlite_error(exc):
            print(printable(f"gpudeck: {paths.state_db()}: {exc}"), file=sys.stderr)
            return EXIT_ERROR
        if os.environ.get("GPUDECK_DEBUG"):
            raise
        print(printable(f"gpudeck: internal error: {type(exc).__name__}: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    finally:
        session.close()
        if session_mod.recorder is not None:
            session_mod.recorder.close()
        session_mod.recorder = session_mod.replay = None


def _is_sqlite_error(exc: BaseException) -> bool:
    """state.db's error, without importing sqlite3 for the verbs that never open it: a command that
    did not load sqlite3 cannot have raised one of its errors."""
    sqlite3 = sys.modules.get("sqlite3")
    return sqlite3 is not None and isinstance(exc, sqlite3.Error)


def _use_tape(args: argparse.Namespace) -> None:
    """--record / --replay: set for the whole process, before any connection is made."""
    if args.replay is None and args.record is None:
        return  # most runs use neither: their modules stay unimported
    from . import session as session_mod
    from .remote.recording import Recorder
    from .remote.replay import Replay, ReplayError

    try:
        if args.replay is not None:
            session_mod.replay = Replay(args.replay, args.replay_speed)
        elif args.record is not None:
            session_mod.recorder = Recorder(args.record)
    except ReplayError as exc:
        raise GpudeckError(str(exc), EXIT_USAGE) from None
    except (UnicodeDecodeError, ValueError):  # bytes that are not a recording's JSON lines
        raise GpudeckError(
            f"{args.replay}: not a gpudeck recording (make one with gpudeck --record FILE)", EXIT_USAGE
        ) from None
    except OSError as exc:
        raise GpudeckError(f"cannot write recording {args.record}: {exc.strerror or exc}") from None
