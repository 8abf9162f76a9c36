#!/usr/bin/env bash
# run_expect.sh — a command that prints its own verdict (the examples: "all ranks hold the same
# bits"): passes only when it exits 0 AND its output matches every --pass ERE and no --fail ERE.
# ctest's PASS_REGULAR_EXPRESSION alone ignores the exit status: a program that printed the line
# and then failed (exit 1, a leak report under ASan, a rank's failure under mpirun) passed.
# Usage: run_expect.sh [--pass ERE]... [--fail ERE]... -- CMD [ARGS...]
set -u
pass=() fail=()
while [ $# -gt 0 ]; do
  case $1 in
    --pass) pass+=("$2"); shift 2 ;;
    --fail) fail+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "run_expect.sh: unknown option '$1' (usage: run_expect.sh [--pass ERE]... [--fail ERE]... -- CMD...)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "run_expect.sh: no command after --" >&2; exit 2; }
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
ok=1
# 77 too: these commands have no skip, so ctest must not read one into their status
[ $rc = 0 ] || { echo "FAIL: $(basename "$1") exited with status $rc"; ok=0; }
for re in "${pass[@]}"; do grep -qE -- "$re" "$out" || { echo "FAIL: the output lacks /$re/"; ok=0; }; done
for re in "${fail[@]}"; do ! grep -qE -- "$re" "$out" || { echo "FAIL: the output has /$re/"; ok=0; }; done
[ $ok = 1 ] || exit 1
echo "PASS: exit status 0, the output as expected"
