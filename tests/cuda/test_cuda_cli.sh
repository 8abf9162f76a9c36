#!/usr/bin/env bash
# test_cuda_cli.sh SCHEDC SCHEDULES_DIR — `schedc run --backend cuda` as a user runs it. Without
# a GPU the backend is refused with a clear message (so is a plugin that does not load); on the
# emulated device (SCHEDC_CUDA_PLUGIN naming tests/emu's plugin, as ctest sets it: the generated
# kernels compiled for the host) every rank's digest equals the threads backend's, for virtual
# ranks, for a device per rank and for a process per device (--processes), over several
# schedules, dtypes and ops (exact mode too), and for the processes of mpirun (--mpi, two pretend hosts). With
# CUDA_REAL=1 (tests/gpu/run_on_device.sh) the same on the real GPU(s): virtual ranks, and a
# device (or process) per rank where there are enough GPUs.
set -u
S=$1; D=$2
pass=0; fail=0
ok() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
digests() { grep '^rank' | sed 's/ (.*//' ; }

emu=${SCHEDC_CUDA_PLUGIN:-}; [ "${CUDA_REAL:-}" = 1 ] && emu=
if [ -z "$emu" ] && [ "${CUDA_REAL:-}" != 1 ]; then
  echo "FAIL: set SCHEDC_CUDA_PLUGIN to the emulator plugin (build/tests/libschedc_emu.so), or CUDA_REAL=1 on a GPU"
  exit 1
fi
# No driver (forced, so this holds on a GPU machine too): a clear refusal, no crash.
out=$(SCHEDC_CUDA_PLUGIN= SCHEDC_LIBCUDA=/nonexistent/libcuda.so.1 "$S" run "$D/ring.lua" --ranks 2 --backend cuda 2>&1); rc=$?
ok "[ $rc != 0 ] && grep -q 'cuda backend is unavailable: no CUDA driver' <<<'$out'" "no driver: $out"
# ... also with a process per GPU: the reason survives the group's cleanup (it once read "CUDA
# device 0 out of range [0, 0)", what freeing the half-made group said last)
out=$(SCHEDC_CUDA_PLUGIN= SCHEDC_LIBCUDA=/nonexistent/libcuda.so.1 "$S" run "$D/ring.lua" --ranks 2 --backend cuda --processes 2>&1); rc=$?
ok "[ $rc != 0 ] && grep -q 'cuda backend is unavailable: no CUDA driver' <<<\"\$out\" && ! grep -q 'out of range' <<<\"\$out\"" "no driver, --processes: $out"
# A plugin that cannot be loaded, or that is no schedc plugin: refused naming it, never the driver.
out=$(SCHEDC_CUDA_PLUGIN=/nonexistent/libschedc_emu.so "$S" run "$D/ring.lua" --ranks 2 --backend cuda 2>&1); rc=$?
ok "[ $rc != 0 ] && grep -q 'cuda backend is unavailable: SCHEDC_CUDA_PLUGIN=/nonexistent/libschedc_emu.so: cannot load it' <<<\"\$out\"" "no plugin: $out"
out=$(SCHEDC_CUDA_PLUGIN=libc.so.6 "$S" run "$D/ring.lua" --ranks 2 --backend cuda --processes 2>&1); rc=$?
ok "[ $rc != 0 ] && grep -q 'SCHEDC_CUDA_PLUGIN=libc.so.6: no sc_cuda_plugin_v1' <<<\"\$out\"" "not a plugin: $out"
out=$("$S" run "$D/ring.lua" --ranks 2 --virtual 2>&1)
ok "grep -q -- '--virtual needs --backend cuda' <<<\"\$out\"" "--virtual without cuda: $out"
out=$("$S" run "$D/ring.lua" --ranks 2 --processes 2>&1)
ok "grep -q -- '--processes needs --backend cuda' <<<\"\$out\"" "--processes without cuda: $out"
out=$(SCHEDC_INJECT=delay:0:10 SCHEDC_CUDA_PLUGIN=$emu "$S" run "$D/ring.lua" --ranks 2 --backend cuda --virtual 2>&1)
ok "grep -q 'kill, delay and jitter .* not available on the cuda backend' <<<\"\$out\"" "delay refused: $out"

export SCHEDC_CUDA_PLUGIN=$emu
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
while read -r file n extra; do
  for mode in "--virtual" "" "--processes"; do
    [ "$mode" != --virtual ] && [ -z "$emu" ] && [ "$ngpu" -lt "$n" ] && continue # a GPU per rank: not enough here
    want=$("$S" run "$D/$file" --ranks "$n" $extra | digests)
    got=$("$S" run "$D/$file" --ranks "$n" $extra --backend cuda $mode --iters 2 2>&1)
    ok "[ -n '$want' ] && [ \"\$(digests <<<\"\$got\")\" = '$want' ] && grep -q 'identical bits every time: yes' <<<\"\$got\"" \
      "$file $n $extra cuda $mode: threads gave
$want
cuda gave
$got"
  done
done <<'LIST'
ring.lua 3 --count 10007 --dtype f32 --op sum
ring.lua 4 --count 4099 --dtype bf16 --op avg
direct.lua 5 --count 777 --dtype f64 --op max
tree.lua 6 --count 3001 --dtype f16 --op sum
halving_doubling.lua 4 --count 2050 --dtype i32 --op prod
hierarchical.lua 4 --nodes 2 --count 4096 --dtype f32 --op sum
ring.lua 4 -D collective=reduce_scatter --count 4000 --dtype bf16 --op sum
ring.lua 3 -D collective=allgather --count 3000 --dtype f16
tree.lua 5 -D collective=broadcast -D root=2 --count 1000 --dtype i64
ring.lua 4 -D collective=reduce -D root=1 --count 1000 --dtype f32 --op min
direct.lua 4 -D order=canonical --count 5000 --dtype f32 --op sum
../tests/dsl/recursive_doubling.lua 4 --count 3001 --dtype f32 --op sum
ring.lua 5 --count 3001 --dtype f32 --op avg --exact
hierarchical.lua 4 --nodes 2 --count 4096 --dtype bf16 --op sum --exact
direct.lua 3 -D collective=reduce -D root=1 --count 1000 --dtype f16 --op avg --exact
LIST
# exact mode: one digest for every plan (ring and direct, allreduce f32 sum, threads and cuda)
a=$("$S" run "$D/ring.lua" --ranks 3 --count 999 --exact | digests)
b=$("$S" run "$D/direct.lua" --ranks 3 --count 999 --exact --backend cuda --virtual | digests)
ok "[ -n \"\$a\" ] && [ \"\$a\" = \"\$b\" ]" "exact: ring on threads gave
$a
direct on cuda gave
$b"
# parts of several tiles per block (2 blocks: a tile is at most 2 MiB, so chunks over 4 MiB):
# a buffer's cells, a temp
# slot's (recursive doubling writes cells that are still read: phases A and C), checksums over
# the tiles, an injected flip named and read again; the threads backend's digests
while read -r file n extra; do
  for mode in "--virtual" "--processes"; do
    [ "$mode" != --virtual ] && [ -z "$emu" ] && [ "$ngpu" -lt "$n" ] && continue
    want=$("$S" run "$D/$file" --ranks "$n" $extra | digests)
    got=$(SCHEDC_CUDA_BLOCKS=2 "$S" run "$D/$file" --ranks "$n" $extra --backend cuda $mode --verify full 2>&1)
    ok "[ -n '$want' ] && [ \"\$(digests <<<\"\$got\")\" = '$want' ]" "$file $n tiles $extra $mode: threads gave
$want
cuda gave
$got"
  done
done <<'LIST'
ring.lua 3 --count 4000037 --dtype f32 --op sum
../tests/dsl/recursive_doubling.lua 4 --count 2500003 --dtype bf16 --op sum
LIST
out=$(SCHEDC_CUDA_BLOCKS=2 SCHEDC_INJECT=flip:1:2 "$S" run "$D/ring.lua" --ranks 3 --count 4000037 --backend cuda --virtual --verify full --repair 2>&1)
ok "[ \"\$(digests <<<\"\$out\")\" = \"\$(\"$S\" run \"$D/ring.lua\" --ranks 3 --count 4000037 | digests)\" ] && grep -q 'read again' <<<\"\$out\"" \
  "tiles: flip:1:2 --verify full --repair: $out"
# verification: a flipped bit in rank 1's result (digest) or in what rank 2 loads from rank 1 at
# step 2 (checksum) is named; with --repair every rank ends with the clean run's bits (the
# threads backend's digests)
want=$("$S" run "$D/ring.lua" --ranks 3 --count 5000 | digests)
for mode in "--virtual" "--processes"; do
  [ "$mode" = --processes ] && [ -z "$emu" ] && [ "$ngpu" -lt 3 ] && continue
  out=$(SCHEDC_INJECT=flipout:1 "$S" run "$D/ring.lua" --ranks 3 --count 5000 --backend cuda $mode --verify digest 2>&1); rc=$?
  ok "[ $rc != 0 ] && grep -q 'silent corruption: rank(s) 1 hold a result that differs from the majority' <<<\"\$out\"" \
    "flipout:1 --verify digest $mode: $out"
  out=$(SCHEDC_INJECT=flipout:1 "$S" run "$D/ring.lua" --ranks 3 --count 5000 --backend cuda $mode --verify digest --repair 2>&1); rc=$?
  ok "[ $rc = 0 ] && [ \"\$(digests <<<\"\$out\")\" = '$want' ] && grep -q 'repaired from rank 0' <<<\"\$out\"" \
    "flipout:1 --verify digest --repair $mode: $out"
  out=$(SCHEDC_INJECT=flip:1:2 "$S" run "$D/ring.lua" --ranks 3 --count 5000 --backend cuda $mode --verify checksum 2>&1); rc=$?
  ok "[ $rc != 0 ] && grep -q 'corrupted transfer: the payload rank 1 sent to rank 2 at step 2 (.*ring.lua:[0-9]*, chunk' <<<\"\$out\"" \
    "flip:1:2 --verify checksum $mode: $out"
  out=$(SCHEDC_INJECT=flip:1:2 "$S" run "$D/ring.lua" --ranks 3 --count 5000 --backend cuda $mode --verify full --repair 2>&1); rc=$?
  ok "[ $rc = 0 ] && [ \"\$(digests <<<\"\$out\")\" = '$want' ] && grep -q 'read again' <<<\"\$out\"" \
    "flip:1:2 --verify full --repair $mode: $out"
done

# staged across (emulated) nodes: said in the header, the same digests
if [ -n "$emu" ]; then
  want=$("$S" run "$D/tree.lua" --ranks 5 --count 3001 --dtype bf16 | digests)
  for mode in "--virtual" "--processes"; do
    out=$(SCHEDC_CUDA_NODES=2 "$S" run "$D/tree.lua" --ranks 5 --count 3001 --dtype bf16 --backend cuda $mode 2>&1)
    ok "grep -q 'staged across SCHEDC_CUDA_NODES=2' <<<\"\$out\" && [ \"\$(digests <<<\"\$out\")\" = '$want' ]" \
      "SCHEDC_CUDA_NODES=2 $mode: $out"
  done
  # the boundaries through (emulated) NCCL between the processes; refused for one process
  out=$(SCHEDC_CUDA_NODES=2 SCHEDC_CUDA_NET=nccl "$S" run "$D/tree.lua" --ranks 5 --count 3001 --dtype bf16 --backend cuda --processes 2>&1)
  ok "grep -q 'staged across SCHEDC_CUDA_NODES=2 through NCCL' <<<\"\$out\" && [ \"\$(digests <<<\"\$out\")\" = '$want' ]" \
    "SCHEDC_CUDA_NET=nccl --processes: $out"
  out=$(SCHEDC_CUDA_NET=nccl "$S" run "$D/tree.lua" --ranks 5 --backend cuda --virtual 2>&1); rc=$?
  ok "[ $rc != 0 ] && grep -q 'SCHEDC_CUDA_NET=nccl: NCCL carries payloads between the processes of a process per GPU' <<<\"\$out\"" \
    "SCHEDC_CUDA_NET=nccl --virtual: $out"
  out=$(SCHEDC_CUDA_NET=mpi "$S" run "$D/tree.lua" --ranks 2 --backend cuda --processes 2>&1); rc=$?
  ok "[ $rc != 0 ] && grep -q \"SCHEDC_CUDA_NET='mpi': ipc (.*) or nccl\" <<<\"\$out\"" "SCHEDC_CUDA_NET=mpi: $out"
  # --mpi: the processes of mpirun, a GPU each, on two pretend hosts (SCHEDC_HOST_ID by rank):
  # between the hosts through (emulated) NCCL, both checks on; the threads backend's digests.
  # SCHEDC_CUDA_NET=ipc across the hosts is refused on every rank.
  if command -v mpirun >/dev/null; then
    MPI="timeout 300 mpirun --allow-run-as-root --oversubscribe -np 4 -x SCHEDC_CUDA_PLUGIN"
    hosts='SCHEDC_HOST_ID=h$((OMPI_COMM_WORLD_RANK / 2)) exec "$0" "$@"'
    want=$("$S" run "$D/ring.lua" --ranks 4 --count 5003 --dtype bf16 | digests)
    out=$($MPI sh -c "$hosts" "$S" run "$D/ring.lua" --count 5003 --dtype bf16 --backend cuda --mpi --verify full 2>&1)
    ok "grep -q 'backend cuda (a process per GPU over MPI)' <<<\"\$out\" && [ \"\$(digests <<<\"\$out\")\" = '$want' ]" \
      "--mpi on two pretend hosts: threads gave
$want
cuda --mpi gave
$out"
    out=$($MPI -x SCHEDC_CUDA_NET=ipc sh -c "$hosts" "$S" run "$D/ring.lua" --count 5003 --backend cuda --mpi 2>&1)
    ok "[ \$(grep -c 'error: rank 0 sets SCHEDC_CUDA_NET=ipc, but the ranks are on 2 hosts' <<<\"\$out\") = 4 ]" \
      "--mpi with SCHEDC_CUDA_NET=ipc across hosts: $out"
  fi
fi
out=$("$S" run "$D/ring.lua" --ranks 2 --mpi 2>&1)
ok "grep -q -- '--mpi needs --backend cuda' <<<\"\$out\"" "--mpi without cuda: $out"

# --processes: more ranks than (emulated) GPUs is refused, naming the device
out=$(SCHEDC_EMU_DEVICES=2 "$S" run "$D/ring.lua" --ranks 3 --backend cuda --processes --timeout 5 2>&1)
[ -n "$emu" ] && ok "grep -q 'rank 2: error: rank 2: CUDA device 2 out of range \[0, 2)' <<<\"\$out\"" "--processes, too few GPUs: $out"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
