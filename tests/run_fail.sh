#!/usr/bin/env bash
# run_fail.sh SCHEDC FILE — a must-fail schedule: runs `schedc check` on FILE (or on the file its
# "-- file:" line names) with its "-- args:" from FILE's folder, and requires the exit status of
# "-- expect-exit:" and every "-- expect:" text in the output (file:line included).
set -u
schedc=$1; file=$2
dir=$(dirname "$file"); base=$(basename "$file")
args=$(sed -n 's/^-- args:\(.*\)$/\1/p' "$file" | head -1)
want=$(sed -n 's/^-- expect-exit: *\([0-9]*\).*$/\1/p' "$file" | head -1)
target=$(sed -n 's/^-- file: *\(.*\)$/\1/p' "$file" | head -1)
[ -n "$target" ] || target=$base
cd "$dir" || exit 1
# shellcheck disable=SC2086
out=$(timeout 60 "$schedc" check "$target" $args 2>&1); rc=$?
ok=1
if [ "$rc" != "$want" ]; then echo "FAIL $base: exit $rc, expected $want"; ok=0; fi
while IFS= read -r exp; do
  if ! grep -qF -- "$exp" <<<"$out"; then echo "FAIL $base: missing message: $exp"; ok=0; fi
done < <(sed -n 's/^-- expect: \(.*\)$/\1/p' "$file")
if [ $ok = 1 ]; then echo "ok $base"; else echo "--- output:"; echo "$out"; exit 1; fi
