#!/usr/bin/env bash
# test_net_bits.sh TEST_NET SCHEDC SCHEDULES — the net backend bit for bit (test_net: every rank
# checks every call against the proven trees) at 2 x 2, 3 x 2, 4 x 1 and 1 x 4 (forked ranks on
# pretend hosts: SCHEDC_HOST_ID; between them UCX over TCP, within one its shared memory), and the
# layout-free orders: the canonical and exact digests test_net prints are one line for 1 x 4,
# 2 x 2 and 4 x 1 on net, threads, shm and (under mpirun, where built) mpi.
set -u
TN=$1; S=$2; D=$3
. "$(dirname "$0")/../skip.sh"
sc_need_net "$S" "$D"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
declare -A dig
run() { # NAME CMD... : its checks pass; its digests kept
  local name=$1 out; shift
  if out=$("$@" 2>&1) && ! grep -qE 'Sanitizer|runtime error:' <<<"$out"; then ok; else bad "$name"; echo "$out" | tail -20; fi
  dig[$name]=$(grep '^digest' <<<"$out" | sort -u)
  echo "$name: $(grep -oE '[0-9]+ (calls checked|cases).*' <<<"$out" | tail -1)"
  case $name in net\ *\ *) [ "$(grep -c '^backend net$' <<<"$out")" = 4 ] && grep -q '^digest' <<<"$out" ||
    bad "$name: want 4 ranks on the net backend, rank 0's digests: $(grep -E '^(backend|digest)' <<<"$out" | sort | uniq -c)" ;; esac
}
run "net 2x2" "$TN" "$D" net 2x2
run "net 3x2" "$TN" "$D" net 3x2 quick
run "net 4x1" "$TN" "$D" net 4x1 quick
run "net 5x2" "$TN" "$D" net 5x2 quick # above 8 ranks the agreement's allgather is Bruck's
# 1 x 4 through the environment (schedc launch, MASTER_ADDR:MASTER_PORT): each rank's main returns,
# so in the ASan tree LeakSanitizer checks every process's teardown
run "net 1x4 launch" env SCHEDC_BACKEND=net bash "$(dirname "$0")/launch_net.sh" "$S" 4 "$TN" "$D" env 1x4 quick
# 2 x 2 as srun starts it: SLURM's variables only (no SCHEDC_BACKEND): schedc_comm_init_env picks
# net because the step spans two nodes, and rank 0 listens on MASTER_PORT
slurm() {
  local port pids=() r rc=0
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  for r in 0 1 2 3; do
    env -u SCHEDC_BACKEND -u SCHEDC_RANK -u RANK SLURM_PROCID=$r SLURM_NTASKS=4 SLURM_LOCALID=$((r % 2)) \
      SLURM_STEP_NUM_NODES=2 SLURM_JOB_ID=4242 SLURM_STEP_ID=0 SCHEDC_HOST_ID=slurmhost$((r / 2)) \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$TN" "$D" env 2x2 quick & pids+=($!)
  done
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  return $rc
}
run "net 2x2 srun" slurm
run "threads 1x4" "$TN" "$D" threads 1x4 quick
run "shm 2x2" "$TN" "$D" shm 2x2 quick
if command -v mpirun >/dev/null && ! "$S" run "$D/ring.lua" --backend mpi --count 1 2>&1 | grep -q "no MPI support"; then
  M="env ASAN_OPTIONS=detect_leaks=0 mpirun --allow-run-as-root --oversubscribe" # Open MPI's own leaks
  run "mpi 2x2" $M -np 1 -x SCHEDC_HOST_ID=a "$TN" "$D" env 2x2 quick : -np 1 -x SCHEDC_HOST_ID=a "$TN" "$D" env 2x2 quick : \
      -np 1 -x SCHEDC_HOST_ID=b "$TN" "$D" env 2x2 quick : -np 1 -x SCHEDC_HOST_ID=b "$TN" "$D" env 2x2 quick
fi
# canonical (direct, and hierarchical over the hosts where there are several) and exact: one
# value each, whatever the layout and backend (3 x 2 has 6 ranks: its own)
for k in "${!dig[@]}"; do
  case $k in "net 3x2"|"net 5x2") continue ;; esac # 6 and 10 ranks: their own digests
  [ -n "${dig[$k]}" ] && [ "${dig[$k]}" = "${dig[net 2x2]}" ] && ok || bad "$k: digests differ from net 2x2: ${dig[$k]} vs ${dig[net 2x2]}"
done
echo "layout-free digests of every backend and layout of 4 ranks:"; sed 's/^/  /' <<<"${dig[net 2x2]}"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
