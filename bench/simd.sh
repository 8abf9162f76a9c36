#!/usr/bin/env bash
# simd.sh [BUILD_DIR] — every vector path side by side in one run (SCHEDC_SIMD=avx512|avx2|scalar,
# each the CPU has): shm ranks, the built-in ring, allreduce of 16 Mi elements (f32 64 MiB, bf16
# and f16 32 MiB; bf16 also 64 MiB, the same bytes as f32: 32 Mi elements), exact sum and avg
# (f32, bf16), and 64 B (f32; with Open MPI's MPI_Allreduce beside it where bench/mpi_allreduce.c
# is built). ROUNDS rounds (default 3), in each every path and case once in
# turn, so the paths share the machine's moods; per cell the median over rounds of the per-call
# mean, p50, p99 and max (ms; µs for 64 B), and each case's time over f32's of the same path and
# round (median of the rounds' ratios). RANKS (default "2 4"), ITERS (default 8), WARMUP (2).
# Prints a markdown table; writes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
S=$B/schedc
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-8}
WARMUP=${WARMUP:-2}
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { for f in "$@"; do [[ " $flags " == *" $f "* ]] || return 1; done; }
paths=""
has avx2 f16c avx512f avx512dq avx512vl avx512bw && paths="avx512"
has avx2 f16c && paths="$paths avx2"
paths="$paths scalar"
# case name, size, schedc bench arguments
cases=("f32|64M|--dtype f32" "bf16|32M|--dtype bf16" "f16|32M|--dtype f16" "bf16 (same bytes)|64M|--dtype bf16"
       "exact f32 sum|64M|--dtype f32 --exact --op sum" "exact bf16 sum|32M|--dtype bf16 --exact --op sum"
       "exact f32 avg|64M|--dtype f32 --exact --op avg" "64 B f32|64|--dtype f32")
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
for n in ${RANKS:-2 4}; do
  for r in $(seq "$ROUNDS"); do
    for p in $paths; do
      for ci in "${!cases[@]}"; do
        IFS='|' read -r name size args <<<"${cases[$ci]}"
        its="--iters $ITERS --warmup $WARMUP"
        [ "$size" = 64 ] && its="--iters 20000 --warmup 200"
        # size count type op mean algbw busbw p50 p99 max iters -> mean p50 p99 max (µs)
        SCHEDC_SIMD=$p "$S" bench schedules/ring.lua --backend shm --ranks "$n" --sizes "$size" $args $its |
          grep -v '^#' | awk '{ print $5, $8, $9, $10 }' >"$t/$n.$p.$ci.$r"
      done
    done
    # the latency baseline in the same round: Open MPI's MPI_Allreduce of 64 B (bench/mpi_allreduce.c)
    if [ -x "$B/mpi_allreduce" ] && command -v mpirun >/dev/null; then
      mpirun --allow-run-as-root --oversubscribe -np "$n" "$B/mpi_allreduce" --sizes 64 --iters 20000 --warmup 200 </dev/null |
        grep -v '^#' | awk '{ print $5, $8, $9, $10 }' >"$t/$n.mpi.$r"
    fi
  done
done
echo "# $(uname -n), $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(nproc) CPUs; paths:$paths; $(uptime | sed 's/.*load/load/')"
echo
echo "| ranks | case | path | mean | p50 | p99 | max | ÷ f32 (same path, per round) |"
echo "|---:|---|---|---:|---:|---:|---:|---|"
med() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
for n in ${RANKS:-2 4}; do
  for ci in "${!cases[@]}"; do
    IFS='|' read -r name size args <<<"${cases[$ci]}"
    for p in $paths; do
      unit=1000; [ "$size" = 64 ] && unit=1
      cols=""
      for k in 1 2 3 4; do
        v=$(for r in $(seq "$ROUNDS"); do awk -v k=$k -v u=$unit '{ print $k / u }' "$t/$n.$p.$ci.$r"; done | med)
        cols="$cols | $(printf '%.2f' "$v")"
      done
      ratios=""
      if [ "$ci" != 0 ] && [ "$size" != 64 ]; then
        ratios=$(for r in $(seq "$ROUNDS"); do paste "$t/$n.$p.$ci.$r" "$t/$n.$p.0.$r" | awk '{ printf "%.2f ", $1 / $5 }'; done)
      fi
      echo "| $n | $name$([ "$size" = 64 ] && echo ' (µs)') | $p$cols | $ratios|"
    done
  done
  if [ -f "$t/$n.mpi.1" ]; then
    cols=""
    for k in 1 2 3 4; do
      cols="$cols | $(printf '%.2f' "$(for r in $(seq "$ROUNDS"); do awk -v k=$k '{ print $k }' "$t/$n.mpi.$r"; done | med)")"
    done
    echo "| $n | 64 B f32 (µs) | Open MPI$cols | |"
  fi
done
