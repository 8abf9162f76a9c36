#!/usr/bin/env bash
# test_cluster_mpi.sh SCHEDC SCHEDULES HOSTS_PROG — Open MPI's mpirun across the test cluster's
# hosts (started on h0, the other hosts reached by its plm_rsh_agent = the cluster's rsh; TCP on
# eth0 between hosts, vader within one): ranks land on the hosts asked for (blocks and --map-by
# node); the mpi backend learns the hosts from their real hostnames (no SCHEDC_HOST_ID) and picks
# the hierarchical default plan for blocks and for round-robin (crossing hosts less often than
# the ring in rank order); every
# schedule's digest over the links equals the threads backend's, at 2 x 2 and 4 x 1; and the bytes
# cross the shaped link (h0's eth0 counters).
set -u
S=$(realpath "$1"); D=$(realpath "$2"); HP=$(realpath "$3")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../skip.sh"
sc_need_mpi "$S" "$D"
[ -n "${CLUSTER_DIR:-}" ] || exec "$here/cluster.sh" -H 4 -S 2 -r 1gbit -t 240 -- bash "$0" "$@"

pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
M="$CLUSTER_ON h0 $CLUSTER_MPIRUN"
L22="--host h0:2,h1:2" L41="--host h0,h1,h2,h3" # 2 x 2 and 4 x 1 of the 4 x 2 cluster

# --- where the ranks run ---------------------------------------------------------------------
where() { $M -np 4 "$@" sh -c 'echo "$OMPI_COMM_WORLD_RANK $(hostname)"' </dev/null 2>&1 | sort | paste -sd' '; }
# (blocks and 4 x 1 show in the plans below: hierarchical on 2 and 4 nodes)
got=$(where $L22 --map-by node)
[ "$got" = "0 h0 1 h1 2 h0 3 h1" ] && ok || bad "mpirun -np 4 $L22 --map-by node: $got"

# --- the hosts as the mpi backend sees them (no SCHEDC_HOST_ID) -----------------------------------
out=$(env -u SCHEDC_HOST_ID $M -np 4 $L22 "$HP" hierarchical </dev/null 2>&1) && ok || { bad "2 x 2 in blocks: not the hierarchical default plans"; echo "$out"; }
out=$(env -u SCHEDC_HOST_ID $M -np 4 $L22 --map-by node "$HP" hierarchical </dev/null 2>&1) && ok || { bad "2 x 2 round-robin: not the locality-ordered hierarchical default plans"; echo "$out"; }
out=$(env -u SCHEDC_HOST_ID $M -np 4 $L41 "$HP" hierarchical </dev/null 2>&1) && ok || { bad "4 x 1: the default plans"; echo "$out"; }

# --- digests over the links = the threads backend's --------------------------------------------
digests() { grep '^rank' | sort; }
check() { # NP MPIRUN-ARGS -- RUN-ARGS
  local np=$1 margs=$2; shift 2
  local want got
  want=$("$S" run "$@" --ranks "$np" 2>&1 | digests)
  # shellcheck disable=SC2086
  got=$($M -np "$np" $margs -x SCHEDC_TIMEOUT=60 "$S" run "$@" --backend mpi </dev/null 2>&1 | digests)
  if [ -n "$want" ] && [ "$want" = "$got" ]; then ok; else bad "mpi on the cluster ($np ranks $margs) $*"; echo "threads: $want"; echo "mpi: $got"; fi
}
check 4 "$L22" "$D/hierarchical.lua" --nodes 2 --count 10007 --dtype bf16
check 4 "$L22" "$D/halving_doubling.lua" -D collective=reduce_scatter --count 10008
check 4 "$L22 --map-by node" "$D/ring.lua" --count 10007 --dtype bf16 --op avg
check 4 "$L41" "$D/tree.lua" --count 10007 --op max
check 4 "$L41" "$D/hierarchical.lua" --nodes 4 -D collective=allgather --count 10008

# --- the bytes cross h0's shaped link ----------------------------------------------------------
sent() { $CLUSTER_ON "$1" tc -s qdisc show dev eth0 | awk '/Sent/ { print $2; exit }'; }
b0=$(sent h0)
# 1M f32 (4 MiB) ring on 2 x 2 in rank order: rank 1 sends h1 (n-1)/n of 2 x 4 MiB = 6 MiB
out=$($M -np 4 $L22 "$S" run "$D/ring.lua" --backend mpi --count 1M --iters 1 </dev/null 2>&1)
b1=$(sent h0)
if [ $((b1 - b0)) -ge 6291456 ] && [ $((b1 - b0)) -le 9000000 ]; then ok; else bad "h0's eth0 sent $((b1 - b0)) bytes for a 4 MiB ring (want 6-9 MB)"; echo "$out"; fi
echo "h0's link: $((b1 - b0)) bytes for a 4 MiB ring allreduce on 2 x 2 (6 MiB of payload)"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
