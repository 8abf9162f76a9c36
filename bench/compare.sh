#!/usr/bin/env bash
# compare.sh [BUILD_DIR] — schedc and the baselines side by side, in one run, on this machine:
# processes on one host, f32 sum allreduce, 8 B - 64 MiB, 2 and 4 ranks. Systems: schedc's
# built-in ring, schedc with the plan `schedc tune` chose per size (tuned here first), Open MPI's
# MPI_Allreduce (bench/mpi_allreduce.c) and Gloo's allreduce (bench/gloo_allreduce.cc), both
# written without schedc code; plus the roofline from this host's measured memcpy bandwidth.
# Then the busy-neighbour run: 8 B - 4 KiB, schedc (shm, built-in choice; and again with each rank
# pinned to a CPU, SCHEDC_BIND=core) and MPI, each with one busy process (`while :; do :; done`) beside the job, and each quiet, BUSY_ITERS calls per size
# (default 20000: a short run fits inside one scheduler slice and hides preemption entirely;
# BUSY_ITERS4, default 2000, when the ranks outnumber the cores; BUSY_SIZES, default 8,64,512,4K);
# each row gives the mean, p50, p99 and max per call of one system.
# Writes bench/results.md (every table) and bench/results/cpu_compare.tsv (the times and busBW
# of each system, with the date and machine), then runs bench/report.sh, which makes the CPU
# table of docs/performance.md's current figures and bench/plots/cpu.svg from it.
# BUSY_ONLY=1: only the busy-neighbour run, its table on stdout, nothing written.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
S=$B/schedc
BUSY_ITERS=${BUSY_ITERS:-20000}
BUSY_ITERS4=${BUSY_ITERS4:-2000} # 4 ranks on 2 cores: Open MPI takes ~ms per call beside a busy process
# busy_table N: the busy-neighbour rows for N ranks, quiet and beside a busy process; systems in
# turn: schedc (shm, built-in choice), schedc with SCHEDC_BIND=core (each rank pinned to a CPU, as
# Open MPI pins np <= 2 by default) and MPI; per call mean, p50, p99 and max (a stall of one call
# in thousands shows only in p99 and max), and schedc's mean and max over MPI's
busy_table() {
  local n=$1 bsz=${BUSY_SIZES:-8,64,512,4K} t its
  its=$([ "$n" -gt "$(nproc)" ] && echo "$BUSY_ITERS4" || echo "$BUSY_ITERS")
  local bit="--iters $its --warmup 20"
  t=$(mktemp -d)
  # (no pinned row when the ranks outnumber the cores: SCHEDC_BIND=core leaves them unpinned then)
  local systems="schedc bound mpi"
  [ "$n" -gt "$(nproc)" ] && systems="schedc mpi"
  for mode in quiet busy; do
    for sys in $systems; do
      local bp=""
      if [ $mode = busy ]; then sh -c 'while :; do :; done' & bp=$!; fi
      # size mean p50 p99 max
      if [ $sys != mpi ]; then
        SCHEDC_BIND=$([ $sys = bound ] && echo core || echo none) "$S" bench --backend shm --ranks "$n" --sizes "$bsz" $bit |
          grep -v '^#' | awk '{ print $1, $5, $8, $9, $10 }' >"$t/$sys.$mode"
      elif [ -x "$B/mpi_allreduce" ] && command -v mpirun >/dev/null; then
        mpirun --allow-run-as-root --oversubscribe -np "$n" "$B/mpi_allreduce" --sizes "$bsz" $bit </dev/null | grep -v '^#' | awk '{ print $1, $5, $8, $9, $10 }' >"$t/$sys.$mode"
      else awk '{ print $1, 0, 0, 0, 0 }' "$t/schedc.$mode" >"$t/$sys.$mode"; fi
      if [ -n "$bp" ]; then kill "$bp"; wait "$bp" 2>/dev/null || true; fi
    done
  done
  echo "| size (B) | neighbour | system | mean us | p50 | p99 | max | mean / MPI's | max / MPI's |"
  echo "|---:|---|---|---:|---:|---:|---:|---:|---:|"
  for mode in quiet busy; do
    for sys in $systems; do
      local name; case $sys in schedc) name=schedc;; bound) name="schedc, SCHEDC_BIND=core";; mpi) name="Open MPI";; esac
      paste -d' ' "$t/$sys.$mode" "$t/mpi.$mode" | while read -r sz sm s50 s99 smx _ mm _ _ mmx; do
        awk -v sz="$sz" -v md=$mode -v nm="$name" -v sm="$sm" -v s50="$s50" -v s99="$s99" -v smx="$smx" -v mm="$mm" -v mmx="$mmx" -v self=$([ $sys = mpi ] && echo 1 || echo 0) 'BEGIN {
          printf "| %s | %s | %s | %.2f | %.2f | %.2f | %.1f | %s | %s |\n", sz, md, nm, sm, s50, s99, smx,
            (self || mm <= 0 ? "-" : sprintf("%.2f", sm / mm)), (self || mmx <= 0 ? "-" : sprintf("%.2f", smx / mmx)) }'
      done
    done
  done
  rm -rf "$t"
}
if [ "${BUSY_ONLY:-0}" = 1 ]; then
  for n in 2 4; do echo; echo "### $n ranks ($(uptime | sed 's/.*load/load/'))"; echo; busy_table $n; done
  exit 0
fi
SIZES=8,64,512,4K,32K,256K,1M,4M,16M,64M
IT="--iters 20 --warmup 5"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" /tmp/gloo-bench-*' EXIT
have_mpi=0; [ -x "$B/mpi_allreduce" ] && command -v mpirun >/dev/null && have_mpi=1
have_gloo=0; [ -x "$B/gloo_allreduce" ] && have_gloo=1
cols() { grep -v '^#' | awk '{ print $1, $5, $7 }'; } # size time_us busbw
for n in 2 4; do
  "$S" tune --ranks $n -o "$tmp/tune$n" --sizes $SIZES >"$tmp/tune$n.txt" 2>/dev/null
  "$S" bench --backend shm --ranks $n --sizes $SIZES $IT | cols >"$tmp/ring$n"
  "$S" bench --backend shm --ranks $n --sizes $SIZES $IT --plain | cols >"$tmp/plain$n"
  "$S" bench --backend shm --ranks $n --sizes $SIZES $IT --tuning "$tmp/tune$n/tuning.txt" >"$tmp/tuned$n.full"
  cols <"$tmp/tuned$n.full" >"$tmp/tuned$n"
  if [ $have_mpi = 1 ]; then
    mpirun --allow-run-as-root --oversubscribe -np $n "$B/mpi_allreduce" --sizes $SIZES $IT </dev/null | cols >"$tmp/mpi$n"
  else awk '{ print $1, 0, 0 }' "$tmp/ring$n" >"$tmp/mpi$n"; fi
  if [ $have_gloo = 1 ]; then
    "$S" launch -n $n -- "$B/gloo_allreduce" --sizes $SIZES $IT </dev/null | cols >"$tmp/gloo$n"
  else awk '{ print $1, 0, 0 }' "$tmp/ring$n" >"$tmp/gloo$n"; fi
  # roofline: allreduce of S bytes on n ranks sharing one memory moves at least (3n+1)S bytes
  # (read n inputs, write the sum once, every rank reads it and writes its own copy); a memcpy at
  # G GB/s moves 2G GB/s, so T >= (3n+1)S / (2 G) with G the all-cores memcpy bandwidth.
  G=$(sed -n 's/.*intra = {[^}]*node_gbps = \([0-9.]*\).*/\1/p' "$tmp/tune$n/host.lua")
  awk -v n=$n -v g="$G" '{ t = (3*n+1)*$1/(2*g*1e3); print $1, t, $1/(t*1e3)*2*(n-1)/n }' "$tmp/ring$n" >"$tmp/roof$n"
  echo "$G" >"$tmp/g$n"
done
date=$(date -u +%Y-%m-%d)
{
  echo "<!-- compare:begin (written by bench/compare.sh; do not edit by hand) -->"
  echo "## Side by side: schedc vs MPI_Allreduce vs Gloo ($date, $(nproc) cores, one run of bench/compare.sh)"
  echo
  echo "Processes on one host, f32 sum allreduce; time = mean of 20 calls after 5 warm-up, slowest rank;"
  echo "busBW = size/time x 2(n-1)/n. *ring*: \`schedc bench --backend shm\` with the built-in ring, out of place"
  echo "on \`schedc_mem_alloc\` buffers (no copy into the shared arena or out; bench's default); *plain*: the same"
  echo "on malloc'd buffers (\`--plain\`: copied in and out, as for most callers' memory);"
  echo "*tuned*: the plan \`schedc tune\` chose for the size (tuned in the same run, first); *MPI*: Open MPI"
  echo "$(mpirun --version 2>/dev/null | head -1 | sed 's/.*) //') \`MPI_Allreduce\`; *Gloo*: libgloo 0.5 \`gloo::allreduce\`, TCP over loopback. Roofline:"
  echo "(3n+1)·S bytes through memory at twice the all-cores memcpy bandwidth; *roof%* = tuned busBW / roofline busBW."
  echo "Ratios are busBW ratios (> 1: schedc faster)."
  for n in 2 4; do
    echo
    echo "### $n ranks (memcpy on all cores: $(cat "$tmp/g$n") GB/s)"
    echo
    echo "| size (B) | ring us | plain us | tuned us | MPI us | Gloo us | tuned busBW | MPI busBW | Gloo busBW | roofline busBW | tuned/MPI | plain/MPI | tuned/Gloo | roof% | tuned plan |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    grep '^# size' "$tmp/tuned$n.full" | sed "s/^# size \([0-9]*\): plan '\(.*\)'.*/\1 \2/" >"$tmp/plans$n"
    paste -d' ' "$tmp/ring$n" "$tmp/plain$n" "$tmp/tuned$n" "$tmp/mpi$n" "$tmp/gloo$n" "$tmp/roof$n" | while read -r sz rt rb _ pt pb _ tt tb _ mt mb _ gt gb _ ft fb; do
      plan=$(awk -v s="$sz" '$1 == s { $1 = ""; print substr($0, 2) }' "$tmp/plans$n")
      awk -v sz=$sz -v rt=$rt -v pt=$pt -v pb=$pb -v tt=$tt -v mt=$mt -v gt=$gt -v tb=$tb -v mb=$mb -v gb=$gb -v fb=$fb -v p="$plan" 'BEGIN {
        printf "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s | %.0f%% | %s |\n", sz, rt, pt, tt, mt, gt, tb, mb, gb, fb,
          (mb > 0 ? sprintf("%.2f", tb / mb) : "-"), (mb > 0 ? sprintf("%.2f", pb / mb) : "-"), (gb > 0 ? sprintf("%.2f", tb / gb) : "-"), 100 * tb / fb, p }'
    done
  done
  echo
  echo "Busy neighbour: small messages, quiet and with one busy process (\`while :; do :; done\`) beside"
  echo "the job, $BUSY_ITERS calls per size ($BUSY_ITERS4 with more ranks than cores; mean, p50, p99 and max"
  echo "per call, each the slowest rank's; lower is better)."
  for n in 2 4; do
    echo
    echo "#### $n ranks, busy neighbour"
    echo
    busy_table $n
  done
  echo
  echo "Plot: [cpu.svg](plots/cpu.svg) (busBW vs size, log-log, per system and rank count; bench/report.sh)."
  echo "<!-- compare:end -->"
} >"$tmp/table.md"
cp "$tmp/table.md" bench/results.md
# the raw figures for bench/report.sh (bench/results/README.md: the format)
{
  echo "# cpu_compare.tsv — schedc beside Open MPI and Gloo: f32 sum allreduce, processes on one host (bench/compare.sh)"
  echo "# date: $date"
  echo "# machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores (one run; load average before the tables: $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "# command: bench/compare.sh (its tables: bench/results.md), schedc $("$S" --version | sed 's/^schedc //')"
  for n in 2 4; do echo "# memcpy_gbps: $n $(cat "$tmp/g$n")"; done
  echo "# columns: ranks system size_bytes time_us busbw_gbps plan"
  for n in 2 4; do
    for sys in ring plain tuned mpi gloo roof; do
      name=$([ $sys = roof ] && echo roofline || echo $sys)
      awk -v n=$n -v s=$name -v p="$tmp/plans$n" 'BEGIN { while ((getline l < p) > 0) { split(l, a, " "); sub(/^[^ ]* /, "", l); gsub(/ /, "_", l); plan[a[1]] = l } }
        { print n, s, $1, $2, $3, (s == "tuned" ? plan[$1] : s == "ring" || s == "plain" ? "ring" : "-") }' "$tmp/$sys$n"
    done
  done
} >bench/results/cpu_compare.tsv
bench/report.sh
cat bench/results.md
