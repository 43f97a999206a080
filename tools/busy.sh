#!/bin/sh
# Run a command on a loaded machine: N CPU-bound processes spin beside it
# and are stopped (by their own pids) when it ends, however it ends.
#
#   tools/busy.sh 2 .venv/bin/python -m pytest -q tests/test_tail_live.py
#
# The exit status is the command's. Tests that pass only on an idle machine
# wait on the clock instead of on what they wait for; this finds them.
set -u
n=${1:?usage: busy.sh N COMMAND...}
shift
pids=""
stop() {
    [ -n "$pids" ] && kill $pids 2>/dev/null
    pids=""
}
trap stop EXIT
trap 'stop; exit 130' INT TERM
i=0
while [ "$i" -lt "$n" ]; do
    # stdout/stderr closed: the spinners hold no pipe of the caller open
    python3 -c 'while True: pass' </dev/null >/dev/null 2>&1 &
    pids="$pids $!"
    i=$((i + 1))
done
"$@"
rc=$?
stop
exit "$rc"
