#!/usr/bin/env bash
# test_tune_mpi.sh SCHEDC SCHEDULES — `schedc tune --backend mpi` under mpirun, 4 ranks as two
# pretend hosts (SCHEDC_HOST_ID a a b b): every rank runs it, rank 0 alone reports and writes the
# table, which names the layout (`hosts HEX`: "2 hosts, ranks in blocks") and holds plans built
# for it; bench --tuning on the same layout uses the table's plans; on another layout (a b a b,
# one host, a threads communicator) the table is refused at init naming its file and line. A
# table without the line is taken by any layout.
set -u
S=$(realpath "$1"); D=$(realpath "$2")
. "$(dirname "$0")/../skip.sh"
sc_need_mpi "$S" "$D"
M="mpirun --allow-run-as-root --oversubscribe"
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# mpmd HOSTIDS... -- ARGS...: one rank per host id, every rank running schedc ARGS
mpmd() {
  local ids=() args=() sep=""
  while [ "$1" != -- ]; do ids+=("$1"); shift; done; shift
  for h in "${ids[@]}"; do args+=($sep -np 1 -x SCHEDC_HOST_ID="$h" -x SCHEDC_TIMEOUT=60 "$S" "$@"); sep=":"; done
  $M "${args[@]}" </dev/null
}

out=$(mpmd a a b b -- tune --backend mpi --sizes 8,256K --keep 1 --margin 1 --iters 3 -o "$w/t" 2>&1); rc=$?
if [ $rc = 0 ] && [ -f "$w/t/tuning.txt" ]; then ok; else bad "tune --backend mpi exited $rc"; echo "$out"; fi
[ "$(grep -c '^# model error' <<<"$out")" = 1 ] && [ "$(grep -c 'measuring the job' <<<"$out")" = 1 ] && ok ||
  bad "not one report (rank 0's): $(grep -c '^# model error' <<<"$out") reports"
grep -qx '# 2 hosts, ranks in blocks' "$w/t/tuning.txt" && grep -qE '^hosts [0-9a-f]{16}$' "$w/t/tuning.txt" && ok ||
  bad "the table does not name the layout: $(cat "$w/t/tuning.txt")"
grep -q 'inter = { kind = "net"' "$w/t/host.lua" && ok || bad "host.lua has no measured link between hosts: $(cat "$w/t/host.lua")"
# the plans were built for 2 nodes (the layout), whatever the size chose
for p in "$w"/t/*.plan; do
  "$S" check "$p" | grep -q '(2 nodes)' && ok || bad "$p is not a plan for the 2 hosts: $("$S" check "$p")"
done
want=$(awk '/^entry/ { print $7 }' "$w/t/tuning.txt" | sed 's/\.lua.*//' | paste -sd' ')

# the same layout: the table's plans, per size
out=$(mpmd a a b b -- bench --backend mpi --tuning "$w/t/tuning.txt" --sizes 8,256K --iters 2 --warmup 1 2>&1); rc=$?
got=$(sed -n "s/^# size [0-9]*: plan '\([^']*\)'.*/\1/p" <<<"$out" | paste -sd' ')
[ $rc = 0 ] && [ -n "$got" ] && [ "$(tr ' ' '\n' <<<"$got" | sort -u | paste -sd' ')" = "$(tr ' ' '\n' <<<"$want" | sort -u | paste -sd' ')" ] && ok ||
  { bad "bench --tuning on the tuned layout: exit $rc, plans '$got', the table's '$want'"; echo "$out"; }

# other layouts: refused at init, every rank, naming the table's line
line=$(grep -n '^hosts ' "$w/t/tuning.txt" | cut -d: -f1)
for ids in "a b a b" "a a a a"; do
  # shellcheck disable=SC2086
  out=$(mpmd $ids -- bench --backend mpi --tuning "$w/t/tuning.txt" --sizes 8 --iters 1 --warmup 0 2>&1); rc=$?
  n=$(grep -c "tuning.txt:$line: this tuning table was measured with its ranks laid out on hosts as" <<<"$out")
  [ $rc != 0 ] && [ "$n" -ge 1 ] && ! grep -q '^ *8 ' <<<"$out" && ok || { bad "layout $ids took the table (exit $rc)"; echo "$out"; }
done
out=$("$S" bench --ranks 4 --tuning "$w/t/tuning.txt" --sizes 8 --iters 1 --warmup 0 2>&1); rc=$?
[ $rc != 0 ] && grep -q "4 ranks are on 1 host (layout" <<<"$out" && ok || { bad "threads took the table (exit $rc)"; echo "$out"; }
# without the line: any layout
grep -v '^hosts ' "$w/t/tuning.txt" >"$w/t/any.txt"
out=$("$S" bench --ranks 4 --tuning "$w/t/any.txt" --sizes 8 --iters 1 --warmup 0 2>&1) && ok || { bad "a table without hosts refused"; echo "$out"; }

echo "$pass passed, $fail failed"
[ $fail = 0 ]
