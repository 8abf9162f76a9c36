#!/usr/bin/env bash
# compare.sh [BUILD_DIR] — schedc and the MPI_Allreduce baseline side by side, in one run, on
# this machine: processes on one host, f32 sum, 8 B - 64 MiB, 2 and 4 ranks. Prints a table with
# the ratio of busBW (schedc / MPI) and writes it to bench/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
S=$B/schedc
MPI_BASE=$B/mpi_allreduce
[ -x "$MPI_BASE" ] || { echo "compare.sh: $MPI_BASE not built (needs MPI)"; exit 1; }
SIZES=8,64,512,4K,32K,256K,1M,4M,16M,64M
out=bench/results.md
{
  echo "# schedc vs MPI_Allreduce — $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m)"
  echo
  echo "Processes on one host, f32 sum, time = mean of 20 calls after 5 warm-up (slowest rank)."
  echo "schedc: \`schedc bench --backend shm\` with the built-in ring; MPI: Open MPI's MPI_Allreduce."
  echo
  for n in 2 4; do
    sch=$("$S" bench --backend shm --ranks $n --sizes $SIZES --iters 20 --warmup 5 | grep -v '^#')
    mpi=$(mpirun --allow-run-as-root --oversubscribe -np $n "$MPI_BASE" --sizes $SIZES --iters 20 --warmup 5 </dev/null | grep -v '^#')
    echo "## $n ranks"
    echo
    echo "| size (B) | schedc time (us) | schedc busBW (GB/s) | MPI time (us) | MPI busBW (GB/s) | busBW ratio |"
    echo "|---:|---:|---:|---:|---:|---:|"
    paste <(echo "$sch") <(echo "$mpi") | awk '{ r = ($14 > 0) ? $7 / $14 : 0; printf "| %s | %.1f | %.3f | %.1f | %.3f | %.2f |\n", $1, $5, $7, $12, $14, r }'
    echo
  done
} | tee "$out"
