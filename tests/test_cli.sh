#!/usr/bin/env bash
# test_cli.sh SCHEDC SCHEDULES_DIR — the schedc command's contract: exit statuses (0 ok,
# 1 rejected, 2 usage), --help everywhere, compile -> plan file -> strict reload, viz output.
set -u
S=$1; D=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
t() {  # t NAME EXPECTED_RC PATTERN CMD...  (PATTERN '' = don't check output)
  local name=$1 want=$2 pat=$3; shift 3
  out=$("$@" 2>&1); rc=$?
  if [ $rc != "$want" ] || { [ -n "$pat" ] && ! grep -qF -- "$pat" <<<"$out"; }; then
    echo "FAIL $name: rc=$rc (want $want), output:"; echo "$out"; fail=$((fail + 1))
  else pass=$((pass + 1)); fi
}
t no-args 2 "usage: schedc COMMAND" "$S"
t help 0 "commands:" "$S" --help
for c in check show compile viz; do t "help-$c" 0 "usage: schedc $c" "$S" $c --help; done
t unknown-cmd 2 "unknown command 'frobnicate'" "$S" frobnicate
t unknown-opt 2 "unknown option '--bogus'" "$S" check "$D/ring.lua" --bogus
t bad-ranks 2 "--ranks 'x' is not a rank count" "$S" check "$D/ring.lua" --ranks x
t missing-file-arg 2 "missing FILE" "$S" check --ranks 2
t bad-define 2 "expected key=value" "$S" check "$D/ring.lua" --ranks 2 -D novalue
t show-needs-mode 2 "give one of --order or --steps" "$S" show "$D/ring.lua" --ranks 2
t compile-needs-o 2 "missing -o OUTPUT" "$S" compile "$D/ring.lua" --ranks 2
t no-such-file 1 "cannot open $tmp/nope.lua" "$S" check "$tmp/nope.lua" --ranks 2
t summary 0 "ok: allreduce 'ring', 8 ranks (1 node), 8 chunks, 14 steps, 112 transfers, 1.750 x buffer sent per rank (max)" "$S" check "$D/ring.lua" --ranks 8
t summary-nodes 0 "16 ranks (2 nodes)" "$S" check "$D/hierarchical.lua" --ranks 16 --nodes 2
t show-rank 0 "chunk 1: (((r2+r3)+r0)+r1)" "$S" show "$D/ring.lua" --ranks 4 --order --rank 3
t show-rank-range 2 "--rank 9 out of range" "$S" show "$D/ring.lua" --ranks 4 --order --rank 9
t show-steps 0 "reduce r0    -> r1    chunk 3" "$S" show "$D/ring.lua" --ranks 4 --steps
t show-rs-unspecified 0 "chunk 0: -" "$S" show "$D/ring.lua" --ranks 4 --order --rank 1 -D collective=reduce_scatter
# compile, then every command takes the plan file
t compile 0 "wrote $tmp/r.plan" "$S" compile "$D/ring.lua" --ranks 5 -o "$tmp/r.plan"
t check-plan 0 "5 ranks" "$S" check "$tmp/r.plan"
t plan-ranks-mismatch 2 "is a plan for 5 ranks" "$S" check "$tmp/r.plan" --ranks 4
a=$("$S" show "$D/ring.lua" --ranks 5 --order); b=$("$S" show "$tmp/r.plan" --order)
if [ "$a" = "$b" ]; then pass=$((pass + 1)); else echo "FAIL plan order differs"; fail=$((fail + 1)); fi
cp "$tmp/r.plan" "$tmp/c.plan"; printf '\x55' | dd of="$tmp/c.plan" bs=1 seek=60 conv=notrunc 2>/dev/null
t corrupt-plan 1 "plan file is corrupted (content hash mismatch)" "$S" check "$tmp/c.plan"
head -c 100 "$tmp/r.plan" > "$tmp/t.plan"
t truncated-plan 1 "truncated" "$S" check "$tmp/t.plan"
t rejected-no-plan 1 "rejected: no plan produced" "$S" compile "$(dirname "$0")/fails/double_count.lua" --ranks 3 -o "$tmp/bad.plan"
[ ! -e "$tmp/bad.plan" ] && pass=$((pass + 1)) || { echo "FAIL: a rejected schedule wrote a plan"; fail=$((fail + 1)); }
t viz 0 "wrote $tmp/r.svg" "$S" viz "$D/ring.lua" --ranks 4 -o "$tmp/r.svg"
arrows=$(grep -c '<line.*marker-end' "$tmp/r.svg")
if [ "$arrows" = 24 ] && grep -q '</svg>' "$tmp/r.svg"; then pass=$((pass + 1)); else echo "FAIL viz: $arrows arrows"; fail=$((fail + 1)); fi
t viz-unwritable 1 "cannot write" "$S" viz "$D/ring.lua" --ranks 4 -o /nonexistent/dir/x.svg
# bench: the nccl-tests columns, one row per size (format only; speed is not a test)
out=$("$S" bench --ranks 2 --sizes 8,4K --iters 2 --warmup 1 2>&1)
rows=$(grep -cE '^ +(8|4096) +(2|1024) +f32 +sum +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +2$' <<<"$out")
if [ "$rows" = 2 ] && grep -q '^# *size *count *type *op *time_us *algbw *busbw *p50_us *p99_us *max_us *iters' <<<"$out"; then pass=$((pass + 1)); else echo "FAIL bench output:"; echo "$out"; fail=$((fail + 1)); fi
t bench-bad-backend 2 "--backend 'tcp'" "$S" bench --ranks 2 --backend tcp
t bench-rs 0 "reduce_scatter" "$S" bench "$D/ring.lua" --ranks 2 -D collective=reduce_scatter --sizes 4K --iters 1 --warmup 0
echo "$pass passed, $fail failed"
[ $fail = 0 ]
