#!/usr/bin/env bash
# test_tune.sh SCHEDC SCHEDULES_DIR — the cost model, the tuning table and `schedc tune`:
# a predicted time equal to the one derived by hand below; link-file errors that name the file
# and the legal keys; a hand-written table choosing direct for small and ring for large sizes
# is what `schedc bench` without FILE uses; a bad table fails with FILE:LINE; `schedc tune`
# measures, writes a table, plans and host.lua that bench and cost then use; --model-only on
# the shipped DGX H100 topology predicts a choice per size without running anything.
set -u
S=$1; D=$2; T=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
chk() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; echo "$out"; fi; }

# 2-rank ring, S = 1e6 bytes, 2 chunks of 5e5. Step 0: each rank reduces 5e5 bytes: on shm the
# reduce pass is the transfer, 5e5 / 5e3 B/us = 100 us + alpha 1 = 101. Step 1: each rank copies
# 5e5 in and out: 1 + 5e5 / 1e4 = 51. Plus call 3 and two local passes 2 x 1e6 / 1e4 = 200.
# Total 355 us; busBW = 1e6 / 355 us x 1 = 2.817 GB/s.
out=$("$S" cost "$D/ring.lua" --ranks 2 --links "$T/links_2rank.lua" --sizes 1000000 2>&1)
chk "grep -Eq '^ +1000000 +355\.00 +2\.817 +2\.817$' <<<\"\$out\"" "cost of the 2-rank ring is not the hand-derived 355 us"
out=$("$S" cost "$D/ring.lua" --ranks 2 --links "$T/links_badkey.lua" 2>&1); rc=$?
chk "[ $rc = 1 ] && grep -q \"links_badkey.lua: unknown key 'reduce_gbs' in links (keys: intra, inter, reduce_gbps\" <<<\"\$out\"" "a misspelt links key is not named with the legal keys"
out=$("$S" cost "$D/ring.lua" --ranks 2 --links "$T/links_none.lua" 2>&1); rc=$?
chk "[ $rc = 1 ] && grep -q \"links_none.lua: no 'links' table\" <<<\"\$out\"" "a file without links is not refused clearly"

# a hand-written table: direct up to 4 KiB, ring above
"$S" compile "$D/direct.lua" --ranks 2 -o "$tmp/direct.plan" >/dev/null
"$S" compile "$D/ring.lua" --ranks 2 -o "$tmp/ring.plan" >/dev/null
printf 'schedc-tuning 1\n# test\nentry allreduce 2 0 4096 0 direct.plan\nentry allreduce 2 4097 inf 65536 ring.plan\nentry allreduce 3 0 inf 0 nothere.plan\n' >"$tmp/t.txt"
out=$("$S" bench --ranks 2 --sizes 8,1M --tuning "$tmp/t.txt" --iters 3 --warmup 1 2>&1); rc=$?
chk "[ $rc = 0 ] && grep -q \"^# size 8: plan 'direct'\" <<<\"\$out\" && grep -q \"^# size 1048576: plan 'ring'\" <<<\"\$out\"" "bench without FILE does not use the table's choice per size"
out=$(SCHEDC_TUNING="$tmp/t.txt" "$S" bench --backend shm --ranks 2 --sizes 64 --iters 3 --warmup 1 2>&1); rc=$?
chk "[ $rc = 0 ] && grep -q \"^# size 64: plan 'direct'\" <<<\"\$out\"" "SCHEDC_TUNING is not used by shm ranks"
printf 'schedc-tuning 1\nentry allreduce 2 0 4096 0 direct.plan\nentry allreduce 2 10 5 0 ring.plan\n' >"$tmp/bad.txt"
out=$("$S" bench --ranks 2 --sizes 8 --tuning "$tmp/bad.txt" 2>&1); rc=$?
chk "[ $rc != 0 ] && grep -q 'bad.txt:3: bad size range' <<<\"\$out\"" "a bad table line is not reported as FILE:LINE"
printf 'schedc-tuning 1\nentry allreduce 2 0 inf 0 missing.plan\n' >"$tmp/bad2.txt"
out=$("$S" bench --ranks 2 --sizes 8 --tuning "$tmp/bad2.txt" 2>&1); rc=$?
chk "[ $rc != 0 ] && grep -q 'bad2.txt:2: plan .*missing.plan' <<<\"\$out\"" "a missing plan file is not reported as FILE:LINE"

# schedc tune on this host, then bench and cost with what it wrote
out=$("$S" tune --ranks 2 --sizes 8,64K --keep 2 -o "$tmp/tuned" --schedules "$D" 2>&1); rc=$?
chk "[ $rc = 0 ] && [ -s '$tmp/tuned/tuning.txt' ] && [ -s '$tmp/tuned/host.lua' ] && grep -q 'model error' <<<\"\$out\"" "schedc tune did not measure and write its table"
# stderr is no terminal here (a log): no progress bar, no carriage return in it
chk "! grep -q \$'\\r' <<<\"\$out\" && ! grep -q 'memory bandwidth' <<<\"\$out\"" "tune draws its progress bar into a log"
# on a terminal (script(1) gives it one) the bar is drawn in place
if command -v script >/dev/null; then
  script -qec "'$S' tune --ranks 2 --sizes 8 --keep 1 -o '$tmp/tuned_tty' --schedules '$D'" /dev/null >"$tmp/tty.out" 2>&1; rc=$?
  chk "[ $rc = 0 ] && grep -q \$'\\r  memory bandwidth' '$tmp/tty.out' && grep -q 'timing survivors' '$tmp/tty.out'" \
    "tune on a terminal draws no progress bar"
fi
chosen=$(awk '$1 == "entry" { print $7 }' "$tmp/tuned/tuning.txt" | head -1)
out=$("$S" bench --ranks 2 --sizes 8 --tuning "$tmp/tuned/tuning.txt" --iters 3 --warmup 1 2>&1); rc=$?
chk "[ $rc = 0 ] && [ -s '$tmp/tuned/$chosen' ] && grep -q '^# size 8: plan' <<<\"\$out\"" "bench does not run with the tuned table"
out=$("$S" cost "$D/ring.lua" --ranks 2 --links "$tmp/tuned/host.lua" --sizes 1M 2>&1); rc=$?
chk "[ $rc = 0 ] && grep -Eq '^ +1048576 +[0-9.]+' <<<\"\$out\"" "cost does not read the measured host.lua"

# model only, shipped DGX H100 topology: one choice per size, nothing measured
out=$("$S" tune --topology "$D/topologies/dgx_h100.lua" --model-only --sizes 8,64M --schedules "$D" 2>&1); rc=$?
chk "[ $rc = 0 ] && grep -q 'for allreduce on 32 ranks' <<<\"\$out\" && [ \$(grep -Ec '^ +(8|67108864) .*\\.lua' <<<\"\$out\") = 2 ] && ! grep -q measuring <<<\"\$out\"" "model-only tune on the DGX topology"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
