#!/usr/bin/env bash
# test_layering.sh SRC — the layers of docs/design.md hold: each folder includes only the headers
# of the folders below it (the build enforces this too, through each CMake target's include
# directories; this names the offending line), only dsl/ includes Lua, only runtime/mpi/ MPI, only runtime/net/ UCX,
# only runtime/cuda/ the CUDA/NCCL declarations, only topology/ hwloc, the CLI only the public header, and no .c file
# in runtime/core/ names a specific backend.
set -u
SRC=$1
cd "$SRC" || exit 2
pass=0; fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# folder of each project header, by name (headers are included by bare name, unique per project)
declare -A home
while read -r h; do home[$(basename "$h")]=$(dirname "$h"); done < <(find common topology codegen dsl runtime ops include cli -name '*.h' 2>/dev/null)

# allowed folders per layer (besides the file's own folder and the public header)
allowed() {
  case $1 in
    common) echo "" ;;
    topology) echo "common" ;;
    codegen) echo "common" ;;
    dsl) echo "common codegen" ;;
    ops) echo "common" ;;
    runtime/core) echo "common codegen dsl ops" ;;
    runtime/cpu) echo "common codegen runtime/core" ;;
    runtime/mpi) echo "common codegen runtime/core runtime" ;;
    runtime/net) echo "common codegen runtime/core runtime" ;;
    runtime/cuda) echo "common codegen runtime/core runtime" ;;
    runtime) echo "common codegen runtime/core topology ops" ;;
    cli) echo "" ;;
  esac
}

for f in $(find common topology codegen dsl ops runtime cli -name '*.[ch]' 2>/dev/null | sort); do
  dir=$(dirname "$f")
  ok=" $dir include/schedc $(allowed "$dir") "
  while IFS=: read -r line inc; do
    name=${inc#*\"}; name=${name%%\"*}
    base=$(basename "$name")
    h=${home[$base]:-}
    if [ -z "$h" ]; then bad "$f:$line: includes \"$name\", which is not a project header"; continue; fi
    case "$ok" in *" $h "*) pass=$((pass + 1)) ;; *) bad "$f:$line: $dir/ may not include $h/$base (allowed: $ok)" ;; esac
  done < <(grep -n '^#include "' "$f" | sed 's/:/:/')
done

# third-party headers: each in its one folder
check_only() { # PATTERN FOLDER WHAT
  local hits
  hits=$(grep -rnE "$1" common topology codegen dsl ops runtime cli --include='*.[ch]' 2>/dev/null | grep -v "^$2/" || true)
  if [ -n "$hits" ]; then bad "$3 outside $2/: $hits"; else pass=$((pass + 1)); fi
}
check_only '^#include <(lua|lauxlib|lualib)\.h>' dsl "Lua headers"
check_only '^#include <mpi\.h>' runtime/mpi "mpi.h"
check_only '^#include <(ucp|uct|ucs)/' runtime/net "UCX headers"
check_only '^#include <hwloc(\.h|/)' topology "hwloc headers"
check_only '^#include <clang-c/' ops "clang-c headers"
check_only '^#include <(cuda|cuda_runtime|nvrtc|nccl)\.h>' __nowhere__ "CUDA toolkit headers (loaded with dlopen, declared in runtime/cuda/dl_abi.h)"

# the core never names a backend
hits=$(grep -nE 'sc_(threads|shm|cuda|net)_backend|mpi_backend|SCHEDC_BACKEND_|cu_group|sc_cpu\b|sc_net\b|MPI_|ucp_' runtime/core/*.c || true)
if [ -n "$hits" ]; then bad "runtime/core names a backend: $hits"; else pass=$((pass + 1)); fi
# the CLI is a client of the public header only
hits=$(grep -n '^#include "' cli/*.c cli/*.h | grep -vE '"(schedc/schedc\.h|cli\.h|bench\.h)"' || true)
if [ -n "$hits" ]; then bad "cli/ includes more than the public header: $hits"; else pass=$((pass + 1)); fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
