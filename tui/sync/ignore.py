"""Which paths a sync leaves out, as git decides: every `.gitignore` (nested ones apply below
their directory, deeper ones win), `.git/info/exclude`, and `.gpudeckignore` files of the same
syntax (read after the `.gitignore` beside them, so they can also re-include with `!`). The
matching itself is pathspec's GitIgnoreSpec; composing the files is done here."""

from __future__ import annotations

import os
from dataclasses import dataclass

import pathspec

IGNORE_FILES = (".gitignore", ".gpudeckignore")


@dataclass(frozen=True)
class Rules:
    """The specs in force in one directory, lowest precedence first: (their base dir, the spec)."""

    specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()

    def ignored(self, rel: str, is_dir: bool) -> bool:
        verdict = None
        for base, spec in self.specs:
            sub = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(sub + "/" if is_dir else sub)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)

    def entering(self, root: str, rel_dir: str) -> Rules:
        """The rules below `rel_dir`: these plus its own ignore files."""
        added = []
        for name in IGNORE_FILES:
            spec = read_spec(os.path.join(root, rel_dir, name))
            if spec is not None:
                added.append((rel_dir, spec))
        return Rules(self.specs + tuple(added)) if added else self


def read_spec(path: str) -> pathspec.GitIgnoreSpec | None:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    lines = [line for line in lines if line.strip() and not line.startswith("#")]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def root_rules(root: str) -> Rules:
    """The rules of the tree's top: .git/info/exclude below its .gitignore files."""
    exclude = read_spec(os.path.join(root, ".git", "info", "exclude"))
    base = Rules((("", exclude),) if exclude is not None else ())
    return base.entering(root, "")
