#!/usr/bin/env bash
# cluster.sh [BUILD_DIR] — topology that matters, measured on the test cluster (tests/cluster/,
# issue 36): 2 hosts x 2 ranks and 4 x 1, each host's link shaped to 1 Gbit/s, f32 sum
# allreduce 4 KiB - 64 MiB, side by side in one run per layout: schedc's flat ring (ring.lua in
# rank order), the hierarchical schedule, the plan `schedc tune --backend mpi` chose on these
# hosts (tuned first, in the same cluster), schedc's net backend where this build has it, Open
# MPI's MPI_Allreduce over the same links (bench/mpi_allreduce.c; btl tcp,self,vader) and Gloo
# (bench/gloo_allreduce.cc, TCP on eth0). Then `schedc cost` with the links tune measured
# (host.lua) against the measured times. Run as root (network namespaces). Prints markdown;
# writes the raw outputs under OUT (default /tmp/schedc-cluster-bench).
#   RATE=1gbit SIZES=4K,16K,64K,256K,1M,4M,16M,64M ITERS=5 WARMUP=2 TUNE_ITERS=3 LAYOUTS="2x2 4x1"
#   TABLES_ONLY=1: print the tables again from OUT's outputs
set -euo pipefail
cd "$(dirname "$0")/.."
B=$(realpath "${1:-build}")
RATE=${RATE:-1gbit}
SIZES=${SIZES:-4K,16K,64K,256K,1M,4M,16M,64M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-2}
TUNE_ITERS=${TUNE_ITERS:-3}
LAYOUTS=${LAYOUTS:-2x2 4x1}
OUT=${OUT:-/tmp/schedc-cluster-bench}
S=$B/schedc
D=$(pwd)/schedules
for p in "$S" "$B/mpi_allreduce" "$B/gloo_allreduce"; do [ -x "$p" ] || { echo "bench/cluster.sh: no $p (build first)"; exit 1; }; done
have_net=0
"$S" bench --help | grep -q 'net' && have_net=1
mkdir -p "$OUT"

# one layout, inside its cluster (CLUSTER_* set): every system's raw output under $OUT/$L
measure() {
  local L=$1 n=$((CLUSTER_NHOSTS * CLUSTER_SLOTS)) o=$OUT/$1
  rm -rf "$o"; mkdir -p "$o"
  local M="$CLUSTER_ON h0 $CLUSTER_MPIRUN -np $n"
  local BA="--backend mpi --sizes $SIZES --iters $ITERS --warmup $WARMUP"
  echo "== $L: $(uptime | sed 's/.*load/load/')" >&2
  uptime >"$o/load"
  # what `schedc topo` sees on a cluster host (its eth0 is a veth: hwloc reads its nominal speed)
  $CLUSTER_ON h0 "$S" topo >"$o/topo.txt" 2>&1 || true
  $M "$S" tune --backend mpi --sizes "$SIZES" --keep 99 --iters "$TUNE_ITERS" -o "$o/tune" </dev/null >"$o/tune.txt" 2>"$o/tune.err"
  echo "   tuned $(date +%T)" >&2
  # shellcheck disable=SC2086
  $M "$S" bench "$D/ring.lua" -D locality=false $BA </dev/null >"$o/ring.txt"
  # shellcheck disable=SC2086
  $M "$S" bench "$D/hierarchical.lua" --nodes "$CLUSTER_NHOSTS" $BA </dev/null >"$o/hier.txt"
  # shellcheck disable=SC2086
  $M "$S" bench --tuning "$o/tune/tuning.txt" $BA </dev/null >"$o/tuned.txt"
  $M "$B/mpi_allreduce" --sizes "$SIZES" --iters "$ITERS" --warmup "$WARMUP" </dev/null >"$o/mpi.txt"
  $M -x GLOO_SOCKET_IFNAME=eth0 "$B/gloo_allreduce" --sizes "$SIZES" --iters "$ITERS" --warmup "$WARMUP" </dev/null >"$o/gloo.txt"
  if [ $have_net = 1 ]; then
    "$S" launch --hosts "$CLUSTER_HOSTLIST" --host-cmd "$CLUSTER_ON %h" -- "$S" bench --backend net --tuning "$o/tune/tuning.txt" \
      --sizes "$SIZES" --iters "$ITERS" --warmup "$WARMUP" </dev/null >"$o/net.txt" 2>"$o/net.err" || true
  fi
  for f in ring.lua hierarchical.lua; do
    local nodes=(--nodes "$CLUSTER_NHOSTS"); [ $f = ring.lua ] && nodes=(--nodes "$CLUSTER_NHOSTS" -D locality=false)
    "$S" cost "$D/$f" --links "$o/tune/host.lua" --ranks "$n" "${nodes[@]}" --sizes "$SIZES" >"$o/cost.$f.txt"
  done
  echo "$CLUSTER_NHOSTS $CLUSTER_SLOTS $CLUSTER_RATE_BPS" >"$o/shape"
  uptime >>"$o/load"
  echo "   done $(date +%T)" >&2
}

for L in $LAYOUTS; do
  [ "${TABLES_ONLY:-0}" = 1 ] && break # the tables again from OUT's outputs
  h=${L%x*} s=${L#*x}
  tests/cluster/cluster.sh -H "$h" -S "$s" -r "$RATE" -t 5400 -- bash -c "$(declare -f measure); $(declare -p S B D SIZES ITERS WARMUP TUNE_ITERS OUT have_net); measure $L"
done

# ---- the tables ---------------------------------------------------------------------------
col() { grep -v '^#' "$1" 2>/dev/null | awk '{ print $1, $5 }'; } # size time_us
colc() { grep -v "^#" "$1" 2>/dev/null | awk "{ print \$1, \$2 }"; } # size time_us (schedc cost)
for L in $LAYOUTS; do
  o=$OUT/$L
  read -r M P BPS <"$o/shape"
  n=$((M * P))
  echo
  echo "### $L: $M host(s) x $P rank(s), $RATE links ($(awk -v b="$BPS" 'BEGIN { printf "%.0f", b / 1e6 }') MB/s)"
  echo
  echo "busBW in MB/s (size / time x 2(n-1)/n; time: mean of $ITERS calls after $WARMUP warm-up, slowest rank). Bound: a host sends"
  echo "2(M-1)/M x size across its link at the shaped rate (the hierarchical minimum); *% bound* = bound time / measured time."
  echo
  hdr="| size | flat ring | hierarchical | tuned | tuned plan | Open MPI | Gloo"
  sep="|---:|---:|---:|---:|---|---:|---:"
  [ -s "$o/net.txt" ] && { hdr="$hdr | net (tuned)"; sep="$sep|---:"; }
  echo "$hdr | tuned/MPI | tuned % bound | hier. % bound | ring % bound | cost err ring | cost err hier. |"
  echo "$sep|---:|---:|---:|---:|---:|---:|"
  grep "^# size" "$o/tuned.txt" | sed "s/^# size \([0-9]*\): plan '\(.*\)'.*/\1 \2/" >"$o/plans"
  join_cols() { paste -d' ' <(col "$o/ring.txt") <(col "$o/hier.txt") <(col "$o/tuned.txt") <(col "$o/mpi.txt") <(col "$o/gloo.txt") \
    <(if [ -s "$o/net.txt" ]; then col "$o/net.txt"; else col "$o/ring.txt" | awk '{ print $1, 0 }'; fi) \
    <(colc "$o/cost.ring.lua.txt") <(colc "$o/cost.hierarchical.lua.txt") "$o/plans"; }
  join_cols | while read -r sz rt _ ht _ tt _ mt _ gt _ nt _ cr _ ch _ plan; do
    awk -v sz="$sz" -v n="$n" -v m="$M" -v bps="$BPS" -v rt="$rt" -v ht="$ht" -v tt="$tt" -v mt="$mt" -v gt="$gt" -v nt="$nt" \
        -v cr="$cr" -v ch="$ch" -v plan="$plan" -v net="$([ -s "$o/net.txt" ] && echo 1 || echo 0)" 'function bw(t) { return t > 0 ? sz / t * 2 * (n - 1) / n : 0 }
      function pct(t) { return t > 0 ? sprintf("%.0f%%", 100 * bound / t) : "-" }
      function err(p, t) { return t > 0 && p > 0 ? sprintf("%+.0f%%", 100 * (p / t - 1)) : "-" }
      BEGIN {
        bound = 2 * (m - 1) / m * sz / bps * 1e6
        printf "| %s | %.1f | %.1f | %.1f | %s | %.1f | %.1f", sz, bw(rt), bw(ht), bw(tt), plan, bw(mt), bw(gt)
        if (net) printf " | %.1f", bw(nt)
        printf " | %.2f | %s | %s | %s | %s | %s |\n", (mt > 0 && tt > 0 ? mt / tt : 0), pct(tt), pct(ht), pct(rt), err(cr, rt), err(ch, ht)
      }'
  done
  echo
  echo "Model (schedc tune on these hosts, $(grep '^# model (' "$o/tune.txt" | sed 's/^# model (measured on the job.s hosts): //')"
  echo "Load: $(sed 's/.*load average: //' "$o/load" | paste -sd' ' | sed 's/ / -> /3')  (1, 5, 15 min: before -> after)"
  echo "schedc topo on h0: $(grep -m1 '^ranks:' "$o/topo.txt")"
  echo "Tuning table: $(grep -v '^#' "$o/tune/tuning.txt" | tr '\n' ';' | sed 's/;/; /g')"
done
