#!/usr/bin/env bash
# run_on_device.sh — the GPU checks of the cuda backend, in one call on a lent GPU machine
# (build first with tests/gpu/prepare.sh; carry build-gpu). Writes under $OUT (default
# ./gpu-out): device.txt, tests.log, bench.md. Checks, each printed PASS/FAIL:
#   - virtual ranks (every rank on this GPU): the bitwise sweep against the tests' independent
#     evaluation of the proven trees (test_bitwise cuda), and a device per rank where there are
#     two or more GPUs (test_bitwise cuda-devices, and a process per GPU sharing memory by CUDA
#     IPC: test_bitwise cuda-procs; [SKIP] with one);
#   - `schedc run --backend cuda --virtual`: digests equal the CPU threads backend's;
#   - verification (digest, checksums): faults named or repaired, no false alarm (test_cuda_verify);
#   - NVRTC: every shipped schedule compiles for sm_80/sm_90 (test_nvrtc quick);
# then bench/gpu_bench (copy bandwidth, reduce kernel bandwidth, virtual-rank allreduce, what
# verification costs, NVRTC compile and cache-hit times). Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=build-gpu
export LD_LIBRARY_PATH="$PWD/$B/lib:${LD_LIBRARY_PATH:-}"
export SCHEDC_CACHE_DIR=/tmp/schedc-cache-$$ # fresh: the bench's first compile is a real one
unset SCHEDC_CUDA_EMULATE
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1; nvcc --version 2>&1 | tail -2; } > "$OUT/device.txt"
fails=0
check() { # NAME CMD...
  local name=$1; shift
  local t0=$(date +%s.%N)
  if "$@" >> "$OUT/tests.log" 2>&1; then r=PASS; else r=FAIL; fails=$((fails + 1)); fi
  grep -q '^\[SKIP\]' <(tail -3 "$OUT/tests.log") && [ $r = PASS ] && r=SKIP
  printf '%s %s (%.0f s)\n' "$r" "$name" "$(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$OUT/summary.txt"
}
echo "== $(date -u)" > "$OUT/tests.log"; : > "$OUT/summary.txt"
check "bitwise, virtual ranks" timeout 300 $B/tests/test_bitwise schedules cuda
check "bitwise, a GPU per rank" timeout 60 $B/tests/test_bitwise schedules cuda-devices
check "bitwise, a process per GPU (CUDA IPC)" timeout 120 $B/tests/test_bitwise schedules cuda-procs
check "schedc run --backend cuda --virtual digests" env CUDA_REAL=1 timeout 60 bash tests/cuda/test_cuda_cli.sh $PWD/$B/schedc $PWD/schedules
check "verification (virtual ranks; more with 3 GPUs)" timeout 120 $B/tests/test_cuda_verify
check "nvrtc compiles every shipped schedule" timeout 90 $B/tests/test_nvrtc schedules quick
timeout 90 $B/gpu_bench schedules 1024 > "$OUT/bench.md" 2>&1 || { echo "FAIL gpu_bench" | tee -a "$OUT/summary.txt"; fails=$((fails + 1)); }
cat "$OUT/device.txt" "$OUT/summary.txt" "$OUT/bench.md"
exit $((fails > 0))
