#!/usr/bin/env bash
# prepare.sh — build what tests/gpu/run_on_device.sh runs on a lent GPU machine, here (x86-64):
# build-gpu/ (release, no MPI) with the Lua shared library beside it in build-gpu/lib, since the
# GPU machine's image has neither Lua nor a package mirror. Then call the device tool with
#   command: bash tests/gpu/run_on_device.sh     carry: ["build-gpu"]
# (build-gpu/ is git-ignored).
set -eu
cd "$(dirname "$0")/../.."
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSCHEDC_WITH_MPI=OFF >/dev/null
cmake --build build-gpu -j"$(nproc)" --target schedc_cli test_bitwise test_nvrtc test_cuda_verify gpu_bench >/dev/null
mkdir -p build-gpu/lib
cp -L "$(ldconfig -p | awk '/liblua5.4.so.0 /{print $NF; exit}')" build-gpu/lib/
# only what the device run needs travels (64 MiB limit)
du -sh build-gpu/schedc build-gpu/tests/test_bitwise build-gpu/tests/test_nvrtc build-gpu/tests/test_cuda_verify build-gpu/gpu_bench build-gpu/lib
