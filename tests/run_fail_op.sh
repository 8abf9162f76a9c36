#!/usr/bin/env bash
# run_fail_op.sh SCHEDC FILE — a must-fail operator file: runs `schedc check-op FILE:NAME` (NAME
# from its "// op:" line) in FILE's folder and requires the exit status of "// expect-exit:" and
# every "// expect:" text in the output (file:line:col included). Skips (77) without libclang.
set -u
schedc=$1; file=$2
dir=$(dirname "$file"); base=$(basename "$file")
name=$(sed -n 's|^// op: *\(.*\)$|\1|p' "$file" | head -1)
want=$(sed -n 's|^// expect-exit: *\([0-9]*\).*$|\1|p' "$file" | head -1)
cd "$dir" || exit 1
out=$(SCHEDC_CACHE_DIR=off timeout 60 "$schedc" check-op "$base:$name" 2>&1); rc=$?
. "$(dirname "$0")/skip.sh"
if grep -q "need libclang\|needs libclang\|none loads" <<<"$out"; then sc_skip_tool libclang "$out"; fi
ok=1
if [ "$rc" != "$want" ]; then echo "FAIL $base: exit $rc, expected $want"; ok=0; fi
while IFS= read -r exp; do
  if ! grep -qF -- "$exp" <<<"$out"; then echo "FAIL $base: missing message: $exp"; ok=0; fi
done < <(sed -n 's|^// expect: \(.*\)$|\1|p' "$file")
if [ $ok = 1 ]; then echo "ok $base"; else echo "--- output:"; echo "$out"; exit 1; fi
