"""gpudeck's PID 1 inside a job's container, run by the image's /bin/sh.

PID 1 gets only the signals it handles, so a plain `sh -c 'python t.py; …'` as PID 1 ignores TERM,
and an init that signals only its child misses a trainer the child shell started. This one runs the
command as its child and forwards every stop signal to it (as the supervisor does on the bare host:
the command's own process, not its group, so DataLoader workers are left to the trainer); when the
child ends while others live on (a shell that died of the signal without passing it on), the same
signal goes to every process left (`kill -1` from PID 1 spares only itself) and it waits for them, so
the trainer still checkpoints (`kill -SIG -1`: the one spelling dash and busybox both take; the host's grace, then SIGKILL, bounds the wait). A command that ended
by itself: what it left gets TERM and 10 s, as on the bare host; PID 1's exit ends the rest. It exits with the child's status. Running `sleep` reaps the orphans
that reparent to it (the shell's wait takes any child).

Its first argument is the job's env file as mounted inside (or `-`): `export NAME='value'` lines
(envfile.py) it sources before the command starts, so the values reach the process without being
in the runtime's config of the container (`inspect` shows none of them).
"""

from __future__ import annotations

LEFTOVER_TICKS = 200  # 10 s: what a command that ended by itself left gets TERM, then the end of PID 1
FORWARDED = ("TERM", "INT", "HUP", "QUIT", "USR1", "USR2")

INIT_SCRIPT = """\
if [ "$1" != - ]; then
  [ -r "$1" ] || { echo "gpudeck: the job's env file is not readable in the container" >&2; exit 97; }
  . "$1"
fi
shift
c=; s=
fwd() { s=$1; if [ -n "$c" ]; then kill -s "$1" "$c" 2>/dev/null; fi; }
for g in %s; do trap "fwd $g" "$g"; done
"$@" &
c=$!
if [ -n "$s" ]; then kill -s "$s" "$c" 2>/dev/null; fi
while :; do wait "$c"; rc=$?; kill -0 "$c" 2>/dev/null || break; done
kill -"${s:-TERM}" -1 2>/dev/null
n=0
while kill -0 -1 2>/dev/null; do
  if [ -z "$s" ]; then n=$((n+1)); [ "$n" -gt %d ] && break; fi
  sleep 0.05
done
exit "$rc"
""" % (" ".join(FORWARDED), LEFTOVER_TICKS)
