#!/usr/bin/env bash
# run_on_device.sh — the GPU checks of the cuda backend, in one call on a lent GPU machine
# (build first with tests/gpu/prepare.sh; carry build-gpu). Writes under $OUT (default
# ./gpu-out): device.txt, tests.log, bench.md. Checks, each printed PASS/FAIL:
#   - virtual ranks (every rank on this GPU): the bitwise sweep against the tests' independent
#     evaluation of the proven trees (test_bitwise cuda), and a device per rank where there are
#     two or more GPUs (test_bitwise cuda-devices, and a process per GPU sharing memory by CUDA
#     IPC: test_bitwise cuda-procs; [SKIP] with one);
#   - `schedc run --backend cuda --virtual`: digests equal the CPU threads backend's;
#   - exact mode: every result the exact reference's and the threads backend's (test_cuda_exact);
#   - verification (digest, checksums): faults named or repaired, no false alarm (test_cuda_verify);
#   - the API's contract: bad arguments named, disagreement, a kernel wait timing out (test_cuda_api);
#   - NVRTC: every shipped schedule compiles for sm_80/sm_90 (test_nvrtc quick);
#   - custom operators (ops/shipped) run by the generated kernels, bit for bit (test_ops cuda);
# then bench/gpu_bench (copy bandwidth, reduce kernel bandwidth, virtual-rank allreduce, what
# verification costs, NVRTC compile and cache-hit times). Exit status: 0 when every check passed.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
B=build-gpu
export LD_LIBRARY_PATH="$PWD/$B/lib:${LD_LIBRARY_PATH:-}"
export SCHEDC_CACHE_DIR=/tmp/schedc-cache-$$ # fresh: the bench's first compile is a real one
unset SCHEDC_CUDA_PLUGIN # the real driver, not the emulator
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv 2>&1; nvcc --version 2>&1 | tail -2
  echo "cpus: $(nproc)"; ldconfig -p | grep -E 'libnvrtc.so|libcuda.so|libnccl.so' | head -6
  ldd $B/schedc | grep -E 'not found|lua' ; } > "$OUT/device.txt"
fails=0
check() { # NAME CMD...
  local name=$1; shift
  local t0=$SECONDS out=$OUT/check.out
  "$@" > "$out" 2>&1
  case $? in 0) r=PASS ;; 77) r=SKIP ;; *) r=FAIL; fails=$((fails + 1)) ;; esac # 77: the tests' skip status
  cat "$out" >> "$OUT/tests.log"
  rm -f "$out"
  printf '%s %s (%d s)\n' "$r" "$name" $((SECONDS - t0)) | tee -a "$OUT/summary.txt"
}
echo "== $(date -u)" > "$OUT/tests.log"; : > "$OUT/summary.txt"
check "bitwise, virtual ranks" timeout 240 $B/tests/test_bitwise schedules cuda
check "bitwise, a GPU per rank" timeout 30 $B/tests/test_bitwise schedules cuda-devices
check "bitwise, a process per GPU (CUDA IPC)" timeout 30 $B/tests/test_bitwise schedules cuda-procs
check "schedc run --backend cuda --virtual digests" env CUDA_REAL=1 timeout 60 bash tests/cuda/test_cuda_cli.sh $PWD/$B/schedc $PWD/schedules
check "exact mode (virtual ranks): against the exact reference and the threads backend" timeout 240 $B/tests/test_cuda_exact schedules virtual
check "verification (virtual ranks; more with 3 GPUs)" timeout 90 $B/tests/test_cuda_verify
check "API contract: errors named, a kernel wait past the timeout reported (virtual ranks; processes with 3 GPUs)" timeout 60 $B/tests/test_cuda_api
check "nvrtc compiles every shipped schedule" timeout 60 $B/tests/test_nvrtc schedules quick
check "custom operators in the generated kernels (virtual ranks) against the proven trees" timeout 180 $B/tests/test_ops schedules ops cuda
timeout 90 $B/gpu_bench schedules 1024 > "$OUT/bench.md" 2>&1 || { echo "FAIL gpu_bench" | tee -a "$OUT/summary.txt"; fails=$((fails + 1)); }
# out-of-bounds and misaligned accesses of the generated kernels (not a pass/fail check: the
# sanitizer may serialize the ranks' launches, which then wait out their budget)
if command -v compute-sanitizer >/dev/null; then
  timeout 60 compute-sanitizer --tool memcheck $B/schedc run schedules/ring.lua --ranks 3 --count 1031 --backend cuda --virtual \
    --timeout 20 > "$OUT/memcheck.log" 2>&1; echo "memcheck exit $?: $(grep -c 'Invalid\|misaligned' "$OUT/memcheck.log") findings" >> "$OUT/summary.txt"
fi
cat "$OUT/device.txt" "$OUT/summary.txt" "$OUT/bench.md"
exit $((fails > 0))
