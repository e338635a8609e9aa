"""The `:` command line's words (issue 36, finding 10: k9s's `:pods`): what a line means, what it
completes to, and the one line said for a bad one. Pure: the fleet's job names and the themes in,
a Command or a reason out."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..fleet import JobModel

TABS = ("fleet", "jobs", "cloud")
VERBS = (*TABS, "job", "logs", "theme", "q", "quit")
WITH_NAME = {"job": "a job's name or id", "logs": "a job's name or id", "theme": "a theme's name"}


@dataclass(frozen=True)
class Command:
    verb: str  # fleet, jobs, cloud, job, logs, theme, quit
    arg: str = ""  # the job id (job, logs) or the theme's name


class CommandError(Exception):
    """A line that means nothing: the message is the one line to show."""


def find_job(jobs: Iterable[JobModel], word: str) -> JobModel:
    """A job by its id, the end of its id (as the `id` column shows it) or its name (the newest of
    several of that name)."""
    jobs = list(jobs)
    for job in jobs:
        if job.id == word:
            return job
    by_name = sorted((j for j in jobs if j.name == word), key=lambda j: j.id)
    if by_name:
        return by_name[-1]
    by_id = [j for j in jobs if j.id.endswith(word) or j.id.startswith(word)]
    if len(by_id) == 1:
        return by_id[0]
    if by_id:
        raise CommandError(f"{word!r}: {len(by_id)} jobs' ids match — type more of it")
    raise CommandError(f"{word!r}: no such job (a name or id from the jobs tab)")


def parse(line: str, jobs: Iterable[JobModel], themes: Sequence[str]) -> Command:
    words = line.strip().lstrip(":").split()
    if not words:
        raise CommandError("type a command: " + ", ".join(f":{v}" for v in VERBS[:-1]))
    verb, args = words[0].lower(), words[1:]
    if verb not in VERBS:
        raise CommandError(f":{verb}: no such command (known: {', '.join(':' + v for v in VERBS[:-1])})")
    if verb in WITH_NAME:
        if len(args) != 1:
            raise CommandError(
                f":{verb} takes {WITH_NAME[verb]}, e.g. :{verb} {_example(verb, jobs, themes)}"
            )
        if verb == "theme":
            if args[0] not in themes:
                raise CommandError(f":theme {args[0]}: no such theme (installed: {', '.join(themes)})")
            return Command("theme", args[0])
        return Command(verb, find_job(jobs, args[0]).id)
    if args:
        raise CommandError(f":{verb} takes no argument")
    return Command("quit" if verb == "q" else verb)


def _example(verb: str, jobs: Iterable[JobModel], themes: Sequence[str]) -> str:
    if verb == "theme":
        return themes[0] if themes else "gpudeck-dark"
    return next((j.name or j.id for j in jobs), "NAME")


def completions(jobs: Iterable[JobModel], themes: Sequence[str]) -> list[str]:
    """Every whole line the command line can complete to (Textual's SuggestFromList takes a prefix)."""
    names = sorted({j.name or j.id for j in jobs})
    return [
        *(f":{v}" for v in TABS),
        ":q",
        *(f":job {n}" for n in names),
        *(f":logs {n}" for n in names),
        *(f":theme {t}" for t in themes),
    ]
