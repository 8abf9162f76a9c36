#!/usr/bin/env bash
# prepare.sh — build what tests/gpu/run_on_device.sh runs on a lent GPU machine, here (x86-64):
# build-gpu/ (release, no MPI) with the Lua shared library beside it in build-gpu/lib, since the
# GPU machine's image has neither Lua nor a package mirror. Then call the device tool with
#   command: bash tests/gpu/run_on_device.sh     carry: ["build-gpu"]
# (build-gpu/ is git-ignored).
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSCHEDC_WITH_MPI=OFF >/dev/null
cmake --build build-gpu -j"$(nproc)" --target schedc_cli test_bitwise test_nvrtc test_cuda_verify test_cuda_api test_cuda_exact test_ops gpu_bench >/dev/null
mkdir -p build-gpu/lib
cp -L "$(ldconfig -p | awk '/liblua5.4.so.0 /{print $NF; exit}')" build-gpu/lib/
# for tests/gpu/profile.sh: the plain kernels' ceilings and the reduce kernel's cubin (SASS there)
if command -v nvcc >/dev/null; then
  nvcc -O3 -arch=sm_90 --fmad=false -o build-gpu/gpu_ceiling bench/gpu_ceiling.cu
  build-gpu/schedc emit-cuda schedules/tree.lua --ranks 2 -D collective=reduce -D chunks=1 --ptx -o build-gpu/k >/dev/null
  "$(dirname "$(command -v nvcc)")/ptxas" -arch=sm_90 build-gpu/k/rank0.ptx -o build-gpu/reduce_rank0.cubin
fi
# only what the device run needs travels (64 MiB limit)
du -sh build-gpu/schedc build-gpu/tests/test_ops build-gpu/tests/test_bitwise build-gpu/tests/test_nvrtc build-gpu/tests/test_cuda_verify build-gpu/tests/test_cuda_api build-gpu/gpu_bench build-gpu/lib
