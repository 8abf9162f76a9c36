#!/usr/bin/env bash
# cluster.sh [BUILD_DIR] — compression's speed on the test cluster (issue 37 item 6; tests/cluster/):
# 2 hosts x 2 ranks, each host's link shaped to 1 Gbit/s (RATE), f32 allreduce (sum) side by side in
# ONE cluster, the configurations interleaved in each of ROUNDS rounds: schedc (`schedc bench
# --backend mpi` under Open MPI across the hosts, the built-in ring in rank order) f32, exact, q16,
# q8, top1 (top-k 1%); and PyTorch over gloo (torch_hooks.py): the plain all_reduce, fp16_compress_hook
# and powerSGD_hook (rank 4). Run as root (network namespaces; the cluster is always torn down).
# Writes bench/compress/speed_cluster_raw.tsv (every round's rows) and speed_cluster.tsv (per size
# and configuration: the median over rounds of the mean, p50, p99 and max per call, and the ratio of
# f32's mean to it in the same round, median, lowest, highest), with the date, machine and load.
#   RATE=1gbit SIZES=4K,64K,1M,4M,16M,64M ITERS=5 WARMUP=2 ROUNDS=2 PY=/usr/bin/python3
set -euo pipefail
cd "$(dirname "$0")/../.."
B=$(realpath "${1:-build}")
RATE=${RATE:-1gbit}
SIZES=${SIZES:-4K,64K,1M,4M,16M,64M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-2}
ROUNDS=${ROUNDS:-2}
PY=${PY:-/usr/bin/python3}
S=$B/schedc
HOOKS=$(pwd)/bench/compress/torch_hooks.py
res=$(pwd)/bench/compress
[ -x "$S" ] || { echo "bench/compress/cluster.sh: no $S (build first)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bytes() { local s=$1; case $s in *K) echo $((${s%K} * 1024)) ;; *M) echo $((${s%M} * 1048576)) ;; *) echo "$s" ;; esac; }
BSIZES=""; for s in ${SIZES//,/ }; do BSIZES="$BSIZES${BSIZES:+,}$(bytes "$s")"; done

# inside the cluster (CLUSTER_* set): every round's rows into $tmp/rows
# (ranks config round size count time_us p50_us p99_us max_us iters)
measure() {
  local n=$((CLUSTER_NHOSTS * CLUSTER_SLOTS)) a0=${CLUSTER_ADDRS%% *} r cfg args port=29600
  for r in $(seq "$ROUNDS"); do
    echo "== round $r: $(uptime | sed 's/.*load/load/')" >&2
    for cfg in f32 exact q16 q8 top1; do
      args=()
      case $cfg in exact) args=(--exact) ;; q16 | q8) args=(--wire "$cfg") ;; top1) args=(--topk 0.01) ;; esac
      # bench's columns: size count type op time_us algbw busbw p50_us p99_us max_us iters
      $CLUSTER_ON h0 $CLUSTER_MPIRUN -np $n "$S" bench --backend mpi --sizes "$BSIZES" --iters "$ITERS" \
        --warmup "$WARMUP" --dtype f32 "${args[@]}" </dev/null |
        awk -v n="$n" -v c="$cfg" -v r="$r" '!/^#/ { print n, c, r, $1, $2, $5, $8, $9, $10, $11 }' >>"$tmp/rows"
      echo "   $cfg $(date +%T)" >&2
    done
    port=$((port + 1))
    local pids=() k i
    for ((k = 0; k < n; k++)); do
      i=$((k / CLUSTER_SLOTS))
      $CLUSTER_ON h$i env RANK=$k WORLD_SIZE=$n MASTER_ADDR=$a0 MASTER_PORT=$port GLOO_SOCKET_IFNAME=eth0 \
        OMP_NUM_THREADS=1 "$PY" "$HOOKS" "$BSIZES" "$ITERS" "$WARMUP" gloo_f32,fp16,powersgd \
        </dev/null >"$tmp/hooks.$k" 2>"$tmp/hooks.$k.err" &
      pids+=($!)
    done
    for k in "${pids[@]}"; do wait "$k"; done
    awk -v n="$n" -v r="$r" '{ print n, $3, r, $1, $2, $4, $5, $6, $7, $8 }' "$tmp/hooks.0" >>"$tmp/rows"
    echo "   torch hooks $(date +%T)" >&2
  done
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
tests/cluster/cluster.sh -H 2 -S 2 -r "$RATE" -t 3000 -- bash -c \
  "$(declare -f measure); $(declare -p S B BSIZES ITERS WARMUP ROUNDS PY HOOKS tmp); measure"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# compressed allreduce on the test cluster: 2 hosts x 2 ranks, links shaped to $RATE (bench/compress/cluster.sh)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, shared with other work"
  echo "# schedc $("$S" --version | sed 's/^schedc //'), backend mpi (Open MPI, btl tcp between hosts), built-in ring; torch $("$PY" -c 'import torch; print(torch.__version__)') over gloo"
  echo "# ROUNDS=$ROUNDS ITERS=$ITERS WARMUP=$WARMUP; load average (1, 5, 15 min): $load0 before, $load1 after"
} >"$tmp/head"
{ cat "$tmp/head"; echo "# columns: ranks config round size count mean_us p50_us p99_us max_us iters"; cat "$tmp/rows"; } >"$res/speed_cluster_raw.tsv"
{
  cat "$tmp/head"
  echo "# per size and config, medians over rounds: mean_us p50_us p99_us max_us; speedup: f32's mean / this mean in the"
  echo "# same round (median, lowest, highest over rounds; > 1 is faster than schedc's f32)"
  echo "# columns: size config mean_us p50_us p99_us max_us speedup speedup_lo speedup_hi rounds"
  awk '{ k = $4 SUBSEP $2; m[k, $3] = $6; p[k, $3] = $7; q[k, $3] = $8; x[k, $3] = $9; f[$4, $3] = ($2 == "f32") ? $6 : f[$4, $3]
         keys[k] = 1; rr[$3] = 1; sz[$4] = 1 }
    function med(a, c,   i, j, t) { for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                   return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2 }
    END { nc = split("f32 exact q16 q8 top1 gloo_f32 fp16 powersgd", cs, " ")
      for (s in sz) for (ci = 1; ci <= nc; ci++) { k = s SUBSEP cs[ci]; if (!(k in keys)) continue
        c = 0; lo = hi = 0
        for (r in rr) if ((k, r) in m) { c++; A[c] = m[k, r]; P[c] = p[k, r]; Q[c] = q[k, r]; X[c] = x[k, r]
          V[c] = f[s, r] / m[k, r]; if (c == 1 || V[c] < lo) lo = V[c]; if (c == 1 || V[c] > hi) hi = V[c] }
        printf "%s %s %.1f %.1f %.1f %.1f %.3f %.3f %.3f %d\n", s, cs[ci], med(A, c), med(P, c), med(Q, c), med(X, c), med(V, c), lo, hi, c } }' \
    "$tmp/rows" | sort -k1,1n -s
} >"$res/speed_cluster.tsv"
cat "$res/speed_cluster.tsv"
