#!/usr/bin/env bash
# run_golden.sh SCHEDC SCHEDULES_DIR GOLDEN [--update] — compares `schedc show --order` of a
# shipped schedule with the golden file; the first line of GOLDEN holds the arguments.
# Goldens were reviewed by hand once; --update rewrites them after an intended change.
set -u
schedc=$1; sdir=$2; golden=$3
args=$(head -1 "$golden" | sed 's/^# args: //')
# shellcheck disable=SC2086
got=$(cd "$sdir" && "$schedc" show $args --order 2>&1)
if [ "${4:-}" = "--update" ]; then { head -1 "$golden"; echo "$got"; } > "$golden.new" && mv "$golden.new" "$golden"; exit 0; fi
if diff -u <(tail -n +2 "$golden") <(echo "$got"); then echo "ok $(basename "$golden")"; else echo "FAIL $(basename "$golden")"; exit 1; fi
