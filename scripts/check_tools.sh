#!/usr/bin/env bash
# check_tools.sh [BUILD_DIR] — the one list of tools the test suite needs, each probed the way its
# tests find it (the built schedc where the library does the finding). A missing tool is named
# with the package that brings it and makes the exit status 1. scripts/test.sh runs this up front
# when SCHEDC_REQUIRE_TOOLS is set (CI: .ci/run, or CI=true); the tests themselves then fail
# instead of skipping on a missing tool (tests/README.md, "Skips and required tools").
# The GPU is not a tool: without one the GPU tests still skip.
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
S=$B/schedc
[ -x "$S" ] || { echo "check_tools: no $S: build first (scripts/setup.sh $B)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export SCHEDC_CACHE_DIR=$tmp/cache
missing=0
ok() { echo "check_tools: ok      $1"; }
miss() { # TOOL INSTALL DETAIL
  echo "check_tools: MISSING $1: install $2"
  if [ -n "${3:-}" ]; then head -c 400 <<<"$3" | sed 's/^/      /'; fi
  missing=$((missing + 1))
}
cache() { sed -n "s|^$1:[A-Z]*=||p" "$B/CMakeCache.txt"; } # a configure-time finding

# libclang and a C compiler: custom operators (ops.*, fails_ops.*, fuzz.op)
out=$("$S" check-op ops/shipped/or64.c:or64 2>&1)
if [ $? = 0 ]; then ok "libclang and a C compiler (schedc check-op)"
elif grep -q libclang <<<"$out"; then miss libclang "libclang-16-dev (Debian; or libclang1-16), or set SCHEDC_LIBCLANG" "$out"
else miss "a C compiler" "gcc (Debian: build-essential), or set SCHEDC_CC" "$out"; fi
case $(cache SCHEDC_CLANG_INCLUDE) in
  ""|*NOTFOUND) miss "libclang's headers (clang-c/Index.h, for ops.clang_abi)" "libclang-16-dev, then configure $B again" ;;
  *) ok "libclang's headers" ;;
esac
# NVRTC: nvrtc.*, ops.nvrtc
if out=$("$S" emit-cuda schedules/ring.lua --ranks 2 --ptx -o "$tmp/ptx" 2>&1); then ok "NVRTC (schedc emit-cuda --ptx)"
else miss NVRTC "the CUDA toolkit's NVRTC (libnvrtc.so: NVIDIA's cuda-nvrtc package, or pip nvidia-cuda-nvrtc), or set SCHEDC_NVRTC" "$out"; fi
# the rest of the CUDA toolkit: cuda.abi (cuda.h), cuda.driver_stub (the stub libcuda), nccl.load
case "$(cache SCHEDC_CUDA_INCLUDE) $(cache SCHEDC_CUDA_STUB)" in
  *NOTFOUND*|" "*|*" ") miss "the CUDA toolkit's cuda.h and lib64/stubs/libcuda.so" "the CUDA toolkit (NVIDIA's cuda-toolkit package) in /usr/local/cuda or CUDA_HOME, then configure $B again" ;;
  *) ok "the CUDA toolkit's cuda.h and stub libcuda.so" ;;
esac
if out=$(env -u SCHEDC_REQUIRE_TOOLS "$B/tests/test_nccl_load" 2>&1); then ok "NCCL (libnccl.so.2)"
else miss NCCL "libnccl.so.2 (NVIDIA's libnccl2 package, or pip nvidia-nccl-cu13), or set SCHEDC_LIBNCCL" "$out"; fi
# MPI: cpu.mpi, mpi.*, examples.allreduce_mpi, cuda.emu.mpi, ops.cli, the torch tests' mpi job
if command -v mpirun >/dev/null; then ok "mpirun"; else miss mpirun "openmpi-bin (Debian)"; fi
if "$S" run schedules/ring.lua --backend mpi --count 1 2>&1 | grep -q "no MPI support"; then
  miss "MPI in this build" "libopenmpi-dev (Debian), then configure $B again"
else ok "MPI in this build"; fi
# UCX: the net backend (net.*, cuda.emu.net, python's test_net.py)
if env -u MASTER_ADDR SCHEDC_RANK=0 SCHEDC_NRANKS=1 "$S" run schedules/ring.lua --backend net --count 1 2>&1 | grep -q "no net backend"; then
  miss "UCX in this build" "libucx-dev (Debian), then configure $B again"
else ok "UCX in this build (the net backend)"; fi
# torch, numpy, pytest: python.* (the interpreters tests/python/run.sh tries, in its order)
py=""
for c in ${SCHEDC_TEST_PYTHON:-/usr/bin/python3 python3}; do
  if command -v "$c" >/dev/null && "$c" -c 'import torch, numpy, pytest' 2>/dev/null; then py=$c; break; fi
done
if [ -n "$py" ]; then ok "torch, numpy, pytest ($py)"
else miss "torch, numpy and pytest" "python3-torch python3-numpy python3-pytest (Debian's torch, for /usr/bin/python3)" \
  "tried: ${SCHEDC_TEST_PYTHON:-/usr/bin/python3 python3}"; fi
# PyPI's torch 2.x venv (tests/python/venv.sh, made by scripts/setup.sh): python.torch2
venv=${SCHEDC_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/schedc/venv-torch2}
if "$venv/bin/python" -c 'import torch, expecttest, numpy, pytest, sys; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null; then
  ok "torch 2.x venv ($venv)"
else miss "torch 2.x venv" "tests/python/venv.sh (PyPI's torch 2.x and expecttest; scripts/setup.sh runs it)" "looked in $venv"; fi
# the test cluster (cluster.*): root, network namespaces, veth, a bridge, tc's tbf
if out=$(env -u SCHEDC_REQUIRE_TOOLS tests/cluster/cluster.sh -H 2 -S 1 -t 30 -- true 2>&1); then ok "the test cluster (tests/cluster/cluster.sh)"
else miss "the test cluster" "iproute2 and util-linux (Debian), run as root, a kernel with netns, veth, bridge and sch_tbf" "$out"; fi

if [ $missing != 0 ]; then
  echo "check_tools: $missing missing: the suite would skip what needs them (SCHEDC_REQUIRE_TOOLS=${SCHEDC_REQUIRE_TOOLS:-unset})"
  exit 1
fi
echo "check_tools: every tool the suite needs is here"
