"""A walk through every screen of the real app, as a user in a terminal sees it: runs
`gpudeck --replay docs/gpu-fleet.jsonl` in tmux at 80×24 and 220×60 in each theme, presses its way
through the fleet, jobs and cloud tabs, a job view, its full log, its processes, help, the new-job
form and a stop question (cancelled), saves each screen's text (`tmux capture-pane -p`) and prints a
one-line summary per screen: lines used, lines that reach the right edge (cut), blank screens.

    python bench/tui_walk.py [OUT_DIR]     # default: a new temporary directory (printed)

The app's stderr is left alone (Textual draws there). Each step waits until the screen shows a word
it must show (or a timeout, reported as such), never a fixed sleep alone.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDING = ROOT / "docs" / "gpu-fleet.jsonl"
SIZES = [(80, 24), (220, 60)]
THEMES = ["gpudeck-dark", "gpudeck-light", "gpudeck-high-contrast"]
SESSION = f"gpudeck-walk-{os.getpid()}"
# (name, keys to press before the capture, a word the screen must show, keys to leave it)
STEPS: list[tuple[str, list[str], str, list[str]]] = [
    ("fleet", ["1"], "h100-a", []),
    ("jobs", ["2"], "llama3-8b-sft", []),
    ("cloud", ["3"], "", ["2"]),
    ("job", ["Home", "Enter"], "cost so far", []),
    ("full-log", ["l"], "lines", ["Escape"]),
    ("processes", ["p"], "PID", ["Escape"]),
    ("help", ["?"], "Keys", ["Escape"]),
    ("stop-question", ["s"], "Cancel", ["n", "Escape"]),
    ("new-job", ["n"], "ommand", ["Escape"]),
]
TIMEOUT = 20.0


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


def capture() -> str:
    return tmux("capture-pane", "-p", "-t", SESSION)


def exited() -> bool:
    return tmux("display-message", "-p", "-t", SESSION, "#{pane_dead}").strip() == "1"


def wait_for(word: str, timeout: float = TIMEOUT) -> tuple[str, bool]:
    """The screen once it shows `word` and has stopped changing, or as it is at the timeout."""
    end = time.monotonic() + timeout
    last, same = "", 0
    while time.monotonic() < end and not exited():
        text = capture()
        same = same + 1 if text == last else 0
        if word in text and same >= 3:  # the same picture three polls running: drawn
            return text, True
        last = text
        time.sleep(0.15)
    return capture(), False


def gone(word: str, timeout: float = 5.0) -> bool:
    """Whether the screen stopped showing `word` within the timeout (a screen left)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not exited():
        if word not in capture():
            return True
        time.sleep(0.2)
    return exited()


def summary(text: str, width: int, height: int) -> str:
    lines = text.splitlines()
    used = sum(1 for line in lines if line.strip())
    full = sum(1 for line in lines if len(line.rstrip()) >= width)
    blank = "EMPTY " if used <= 2 else ""
    return f"{blank}{used}/{height} lines used, {full} reach the right edge"


def walk(out: Path, width: int, height: int, theme: str) -> list[str]:
    home = Path(tempfile.mkdtemp(prefix="gpudeck-walk-home-"))
    (home / "config.toml").write_text(f'[ui]\ntheme = "{theme}"\n')
    env = f"GPUDECK_HOME={shlex.quote(str(home))} PYTHONPATH={shlex.quote(str(ROOT))} TERM=xterm-256color"
    cmd = f"cd {shlex.quote(str(ROOT))} && {env} {shlex.quote(sys.executable)} -m tui --replay {shlex.quote(str(RECORDING))}"
    for attempt in range(10):  # the last walk's kill-session may still be taking the server down
        try:
            tmux("new-session", "-d", "-s", SESSION, "-x", str(width), "-y", str(height))
            break
        except subprocess.CalledProcessError:
            if attempt == 9:
                raise
            time.sleep(0.5)
    tmux("set-option", "-t", SESSION, "remain-on-exit", "on")  # a crash's last words stay readable
    tmux("respawn-pane", "-k", "-t", SESSION, cmd)
    report = []

    def restart() -> None:  # after a crash: the app again, on the jobs tab, for the screens left
        tmux("respawn-pane", "-k", "-t", SESSION, cmd)
        wait_for("h100-a", 60.0)
        tmux("send-keys", "-t", SESSION, "2")
        wait_for("llama3-8b-sft")

    try:
        wait_for("h100-a", 60.0)
        for name, keys, word, leave in STEPS:
            for key in keys:
                tmux("send-keys", "-t", SESSION, key)
                time.sleep(0.2)
            text, ok = wait_for(word)
            time.sleep(1.5)  # a crash right after the picture settled (a traceback takes a moment)
            crashed = exited()
            text = capture() if crashed else text
            (out / f"{width}x{height}-{theme}-{name}.txt").write_text(text)
            note = "" if ok else f"  (no {word!r} within {TIMEOUT:.0f} s)"
            if crashed:
                note += "  APP EXITED (its last screen is saved; restarted for the rest)"
            report.append(f"{width}x{height} {theme:<22} {name:<14} {summary(text, width, height)}{note}")
            if crashed:
                restart()
                continue
            for key in leave:
                tmux("send-keys", "-t", SESSION, key)
                time.sleep(0.3)
            if leave and word and gone(word) is False:  # an esc taken for the start of a sequence: again
                tmux("send-keys", "-t", SESSION, leave[-1])
                if gone(word) is False:
                    report[-1] += f"  (still on {name} after {' '.join(leave)})"
            if leave and exited():
                report[-1] += "  APP EXITED on leaving (restarted)"
                restart()
        tmux("send-keys", "-t", SESSION, "q")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", SESSION], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
    return report


def main() -> None:
    if shutil.which("tmux") is None:
        raise SystemExit("tui_walk: needs tmux")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="gpudeck-walk-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"screens saved under {out}")
    for width, height in SIZES:
        for theme in THEMES:
            for line in walk(out, width, height, theme):
                print(line, flush=True)


if __name__ == "__main__":
    main()
