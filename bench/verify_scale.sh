#!/usr/bin/env bash
# verify_scale.sh [SCHEDC] — how `schedc check` time grows with the rank count (ring: n*(n-1)*2
# transfers, direct: the same, halving_doubling: n*log n). Best of 3 wall times per point.
set -eu
S=${1:-build/schedc}
printf "%-18s %6s %10s %9s\n" schedule ranks transfers best_s
for f in ring direct halving_doubling; do
  for n in 128 256 512 1024 2048; do
    best=999
    for i in 1 2 3; do
      t0=$(date +%s.%N); out=$($S check schedules/$f.lua --ranks $n); t1=$(date +%s.%N)
      t=$(echo "$t1 - $t0" | bc); best=$(echo "if ($t < $best) $t else $best" | bc)
    done
    x=$(sed -n 's/.* \([0-9]*\) transfers.*/\1/p' <<<"$out")
    printf "%-18s %6d %10d %9.3f\n" $f $n $x $best
  done
done
