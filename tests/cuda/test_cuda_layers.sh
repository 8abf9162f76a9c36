#!/usr/bin/env bash
# test_cuda_layers.sh OBJECT... — the cuda backend's layers (docs/design.md) hold in the object
# files: file A calls file B when A's object needs a symbol B's object defines (nm), and every
# call goes to a lower layer, so there is no call circle. A new file must be given its layer
# here. OBJECT...: runtime/cuda's objects ($<TARGET_OBJECTS:schedc_cuda>), or one folder of them.
set -u
# nm comes with binutils, which built the objects: no skip
# layer of each file: a file may call only files of lower layers
declare -A layer=(
  [nvrtc]=0 [cuda_compile]=1 [cuda_driver]=2 [cuda_nccl]=2 [cuda_plugin]=3
  [cuda_group]=4 [cuda_args]=4
  [cuda_kset]=5 [cuda_verify]=5
  [cuda_phase]=6
  [cuda_comm]=7 [cuda_proc]=7
  [cuda_proc_init]=8 [cuda_stream]=8 [cuda_api]=8
)
pass=0; fail=0
if [ $# = 1 ] && [ -d "$1" ]; then objs=("$1"/*.c.o); else objs=("$@"); fi
[ ${#objs[@]} -gt 0 ] && [ -e "${objs[0]}" ] || { echo "FAIL: no objects given"; exit 1; }
declare -A def
for o in "${objs[@]}"; do
  f=$(basename "$o" .c.o)
  if [ -z "${layer[$f]:-}" ]; then fail=$((fail + 1)); echo "FAIL: $f.c has no layer in $0"; continue; fi
  for s in $(nm --defined-only "$o" | awk '$2 ~ /^[A-Z]$/ {print $3}'); do def[$s]=$f; done
done
for o in "${objs[@]}"; do
  f=$(basename "$o" .c.o)
  [ -n "${layer[$f]:-}" ] || continue
  for s in $(nm -u "$o" | awk '{print $2}'); do
    t=${def[$s]:-}
    [ -z "$t" ] || [ "$t" = "$f" ] && continue
    if [ "${layer[$t]}" -lt "${layer[$f]}" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL: $f.c (layer ${layer[$f]}) calls $s of $t.c (layer ${layer[$t]}): calls go down only"; fi
  done
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
