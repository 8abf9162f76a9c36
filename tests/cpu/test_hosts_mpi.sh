#!/usr/bin/env bash
# test_hosts_mpi.sh PROGRAM — an mpi communicator learns its hosts at init (SCHEDC_HOST_ID
# pretends several): 4 ranks as 2 hosts of 2 consecutive ranks, and 2 hosts interleaved (a, b,
# a, b, as mpirun --map-by node places them), get the hierarchical default plans, crossing
# between hosts less often than the ring in rank order; 1 host, and 3 + 1, get the ring; every
# layout sums right.
set -u
P=$1
. "$(dirname "$0")/../skip.sh"
command -v mpirun >/dev/null || sc_skip_tool mpirun "the mpi backend's host exchange"
M="mpirun --allow-run-as-root --oversubscribe"
pass=0; fail=0
run() { # name want hostids...
  local name=$1 want=$2; shift 2
  local args=() sep=""
  for h in "$@"; do args+=($sep -np 1 -x SCHEDC_HOST_ID="$h" "$P" "$want"); sep=":"; done
  if out=$($M "${args[@]}" 2>&1 </dev/null); then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $name"; echo "$out"; fi
}
run "two hosts, blocks" hierarchical a a b b
run "two hosts, interleaved" hierarchical a b a b
run "two hosts, 3 and 3 interleaved" hierarchical a b b a a b
run "one host" ring a a a a
run "two hosts, 3 and 1" ring a a b a
echo "$pass passed, $fail failed"
[ $fail = 0 ]
