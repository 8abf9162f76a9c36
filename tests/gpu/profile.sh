#!/usr/bin/env bash
# profile.sh — why the reduce kernel reaches the bandwidth it does, in one call on a lent GPU
# machine (after tests/gpu/prepare.sh, which also builds build-gpu/gpu_ceiling with nvcc and the
# reduce kernel's cubin when nvcc is here; carry build-gpu): the plain kernels' ceilings
# (bench/gpu_ceiling.cu), the generated kernel's SASS loads and stores, and Nsight Compute on one
# timed call of gpu_bench's 2-rank reduce (132 blocks x 512 threads). Writes under $OUT.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=build-gpu
export LD_LIBRARY_PATH="$PWD/$B/lib:${LD_LIBRARY_PATH:-}" SCHEDC_CACHE_DIR=/tmp/schedc-cache-$$
[ -x $B/gpu_ceiling ] && timeout 120 $B/gpu_ceiling 1024 > "$OUT/ceiling.md" 2>&1
[ -f $B/reduce_rank0.cubin ] && cuobjdump -sass $B/reduce_rank0.cubin > "$OUT/reduce.sass" 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] && timeout 300 "$NCU" --clock-control none -k regex:schedc_all --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
  --section LaunchStats --section SchedulerStats \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__cycles_active.avg \
  $B/gpu_bench schedules 1024 reduce 132 512 > "$OUT/ncu.txt" 2>&1
cat "$OUT/ceiling.md"
grep -E 'Duration|DRAM Throughput|Memory Throughput|dram__bytes|lts__t_bytes|Achieved Occupancy|Stall|Warp Cycles|Registers|Block Limit|Eligible|Issued Warp|One or More|L2 Hit|L1/TEX Hit|reduce call|\| 132' "$OUT/ncu.txt" | head -60
grep -cE 'LDG|LD\.E' "$OUT/reduce.sass"; grep -E 'LDG|STG|LD\.E|ST\.E' "$OUT/reduce.sass" | sed 's/^ *//' | sort | uniq -c | sort -rn | head -12
