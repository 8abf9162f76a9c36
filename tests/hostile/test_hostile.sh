#!/usr/bin/env bash
# test_hostile.sh SCHEDC SCHEDULES_DIR TRAIN_MLP — careless input (issue 19, docs/reliability.md):
# empty and missing paths, outputs that are the input or not regular files, FIFOs, devices and
# huge files given as inputs, malformed numbers and variables, missing inputs, stopped and
# orphaned ranks. Each case asserts the exit status, a message that names what was wrong, that
# nothing was overwritten, and a bounded wall time: every command runs under `timeout 30`, so a
# hang fails the case instead of hanging ctest.
set -u
S=$1; D=$2; TRAIN=$3
R=$D/ring.lua
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2"; fail=$((fail + 1)); }
# h NAME WANT_RC MAX_SECONDS PATTERN -- CMD...   (PATTERN '' = don't check the output)
h() {
  local name=$1 want=$2 max=$3 pat=$4; shift 5
  local t0; t0=$(date +%s.%N)
  out=$(timeout 30 "$@" 2>&1); rc=$?
  local dt; dt=$(echo "$(date +%s.%N) - $t0" | bc)
  if [ "$rc" != "$want" ]; then bad "$name: exit $rc (want $want)" "$out"
  elif [ -n "$pat" ] && ! grep -qF -- "$pat" <<<"$out"; then bad "$name: missing '$pat'" "$out"
  elif [ "$(echo "$dt > $max" | bc)" = 1 ]; then bad "$name: took $dt s (limit $max)" "$out"
  else pass=$((pass + 1)); fi
}
same() { cmp -s "$1" "$2" && pass=$((pass + 1)) || bad "$3: $1 was changed"; }
check() { if eval "$1"; then pass=$((pass + 1)); else bad "$2"; fi; }
gone() { # gone PID...: each exited (absent, or a zombie nobody reaps in this container)
  local p st
  for p in "$@"; do
    st=$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)
    [ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ] || return 1
  done
}

# ---- 4. empty or missing paths; output folders are created ----------------------------------
root_had=0; [ -e /rank0.bin ] && root_had=1
h outputs-empty 2 10 "--outputs '' names no folder" -- "$S" run "$R" --ranks 2 --count 16 --outputs ''
if [ $root_had = 0 ]; then
  check "[ ! -e /rank0.bin ]" "--outputs '' wrote /rank0.bin"
  rm -f /rank0.bin /rank1.bin 2>/dev/null # what a regression wrote
fi
h inputs-empty 2 10 "--inputs '' names no folder" -- "$S" run "$R" --ranks 2 --count 16 --inputs ''
h outputs-created 0 20 "all 2 ranks agree: yes" -- "$S" run "$R" --ranks 2 --count 16 --outputs "$tmp/new/deep"
check "[ -f '$tmp/new/deep/rank0.bin' ] && [ -f '$tmp/new/deep/rank1.bin' ]" "--outputs did not create its folder"
h outputs-not-folder 2 10 "is a regular file, not a folder" -- "$S" run "$R" --ranks 2 --count 16 --outputs "$R"
h checkpoint-created 0 30 "weights digest" -- "$S" launch -n 2 -- "$TRAIN" --steps 10 --schedule "$R" --checkpoint "$tmp/ck/deep"
check "[ -f '$tmp/ck/deep/ckpt-0000000010.bin' ]" "train_mlp --checkpoint did not create its folder"

# ---- 5. -o never replaces its input or a non-regular file; refused runs touch nothing --------
cp "$R" x.lua
h o-self 2 10 "is the input 'x.lua'" -- "$S" compile x.lua --ranks 2 -o x.lua
same x.lua "$R" o-self
ln x.lua hard.lua
h o-hardlink 2 10 "the same file under another name" -- "$S" compile x.lua --ranks 2 -o hard.lua
same x.lua "$R" o-hardlink
ln -s x.lua soft.lua
h o-symlink 2 10 "the same file under another name" -- "$S" compile x.lua --ranks 2 -o soft.lua
check "[ -L soft.lua ]" "o-symlink: the link was replaced"
h viz-self 2 10 "is the input" -- "$S" viz x.lua --ranks 2 -o x.lua
same x.lua "$R" viz-self
mkfifo out.fifo
h o-fifo 2 10 "-o 'out.fifo' is a FIFO" -- "$S" compile "$R" --ranks 2 -o out.fifo
check "[ -p out.fifo ]" "o-fifo: the FIFO was replaced"
h viz-fifo 2 10 "-o 'out.fifo' is a FIFO" -- "$S" viz "$R" --ranks 2 -o out.fifo
mkdir out.dir
h o-folder 2 10 "is a directory" -- "$S" compile "$R" --ranks 2 -o out.dir
if mknod null.dev c 1 3 2>/dev/null; then
  h o-device 2 10 "is a character device" -- "$S" compile "$R" --ranks 2 -o null.dev
  check "[ -c null.dev ]" "o-device: the device node was replaced"
fi
h o-empty 2 10 "an empty path names no file" -- "$S" compile "$R" --ranks 2 -o ''
h target-first 2 10 "--target 'gpu'" -- "$S" compile "$R" --ranks 2 -o t.plan --target gpu
check "[ ! -e t.plan ]" "a refused compile (--target) wrote its plan"
h emit-not-folder 2 10 "must name a folder" -- "$S" emit-cuda "$R" --ranks 2 -o x.lua
same x.lua "$R" emit-not-folder

# ---- 7. numbers parsed strictly; files checked for type and size before they are read ------
for v in nan inf -1 0 2s 0x10 1e999 " 1"; do
  h "timeout-$v" 2 10 "--timeout '$v' is not a number of seconds" -- "$S" run "$R" --ranks 2 --count 16 --timeout "$v"
done
for v in nan inf 2s; do
  h "env-timeout-$v" 1 10 "SCHEDC_TIMEOUT='$v'" -- env SCHEDC_TIMEOUT=$v "$S" run "$R" --ranks 2 --count 16
done
for v in nan abc inf -1; do
  h "grace-$v" 2 10 "--grace '$v' is not a number of seconds" -- "$S" launch -n 1 --grace "$v" -- true
done
for v in 9999999999999999999G 99999999999G -1 +5 " 5" 5X; do
  h "count-$v" 2 10 "--count '$v' is not an element count" -- "$S" run "$R" --ranks 2 --count "$v"
done
for v in " 4" +4 4x 99999999999999999999; do
  h "check-ranks-$v" 2 10 "--ranks '$v' is not a rank count from 1 to 65536" -- "$S" check "$R" --ranks "$v"
done
h cost-ranks 2 10 "--ranks 'abc' is not a rank count" -- "$S" cost "$R" --ranks abc --links x
h tuning-devzero 1 10 "/dev/zero is a character device, not a regular file" -- \
  env SCHEDC_TUNING=/dev/zero "$S" run "$R" --ranks 2 --count 16
mkfifo plan.fifo
h plan-fifo 1 10 "plan.fifo is a FIFO, not a regular file" -- "$S" check plan.fifo --ranks 2
h topology-fifo 2 10 "plan.fifo is a FIFO, not a regular file" -- "$S" check "$R" --topology plan.fifo
h plan-folder 1 10 "is a directory, not a regular file" -- "$S" check ./out.dir --ranks 2
"$S" compile "$R" --ranks 2 -o good.plan >/dev/null
# 3 GB (sparse) behind a plan header: refused from the header, nothing else read
{ head -c 8 good.plan; printf '\002\000\000\000'; } > big2.plan; truncate -s 3G big2.plan
h plan-3g-version 1 5 "plan file version 2 is not supported" -- "$S" check big2.plan
{ head -c 12 good.plan; } > big1.plan; truncate -s 3G big1.plan
h plan-3g-length 1 5 "truncated or has trailing bytes" -- "$S" check big1.plan
rm -f big1.plan big2.plan

# ---- 8. inputs checked before any rank starts; the parent returns; ranks die with it ---------
mkdir in; head -c 64 /dev/urandom > in/rank0.bin; head -c 10 /dev/urandom > in/rank1.bin
h inputs-short 2 5 "in/rank1.bin is 10 bytes; rank 1 needs 64" -- "$S" run "$R" --ranks 2 --count 16 --inputs in
h inputs-missing 2 5 "cannot open none/rank0.bin" -- "$S" run "$R" --ranks 2 --count 16 --inputs none
head -c 64 /dev/urandom > in/rank1.bin
h outputs-are-inputs 2 5 "is the --inputs folder" -- "$S" run "$R" --ranks 2 --count 16 --inputs in --outputs in
# kill -9 the parent of a shm run mid-run: no rank process may remain
SCHEDC_INJECT=delay:0:200000 "$S" run "$R" --ranks 3 --count 1000 --iters 1000 --backend shm >/dev/null 2>&1 &
P=$!
sleep 1.5; kids=$(pgrep -P $P | tr '\n' ' ')
kill -9 $P; wait $P 2>/dev/null
rm -f /dev/shm/schedc-run$P-* # the ranks die with it and cannot remove their segments
for _ in $(seq 50); do gone $kids && break; sleep 0.1; done
check "[ -n '$kids' ] && gone $kids" "killed run parent: ranks left running: $kids"
gone $kids || kill -9 $kids 2>/dev/null # a regression's orphans
# ... and of schedc launch
"$S" launch -n 2 -- sleep 60 >/dev/null 2>&1 &
P=$!
sleep 1; kids=$(pgrep -P $P | tr '\n' ' ')
kill -9 $P; wait $P 2>/dev/null
for _ in $(seq 50); do gone $kids && break; sleep 0.1; done
check "[ -n '$kids' ] && gone $kids" "killed launch parent: ranks left running: $kids"
gone $kids || kill -9 $kids 2>/dev/null
# a stopped rank: the parent returns (after the timeout + 10 s) and names it
"$S" run "$R" --ranks 3 --count 1000 --iters 10000000 --backend shm --timeout 1 > stop.out 2>&1 &
P=$!
sleep 1.5; k=$(pgrep -P $P | head -1); kill -STOP "$k"
t0=$(date +%s)
for _ in $(seq 300); do kill -0 $P 2>/dev/null || break; sleep 0.1; done
if kill -0 $P 2>/dev/null; then bad "stopped rank: the parent did not return in 30 s"; kill -9 $P "$k"; rm -f /dev/shm/schedc-run$P-*
else
  wait $P; rc=$?
  check "[ $rc = 1 ] && grep -q 'was stopped for longer than 11 s' stop.out" "stopped rank: exit $rc, $(cat stop.out)"
fi

# ---- 10. overflow in the DSL; threads that cannot be created ---------------------------------
printf 'local s = schedule{ chunks = 2 }\nlocal st = s:step()\nst:copy(0, 1, 1, math.maxinteger)\nreturn s\n' > ovf.lua
h copy-maxinteger 1 10 "ovf.lua:3: bad argument #4 to 'copy' (chunk count 9223372036854775807 out of range [1, 1]" \
  -- "$S" check ovf.lua --ranks 2
# 200 thread stacks do not fit in 400 MB of address space (not under ASan: its shadow does not either)
out=$(ulimit -v 400000; timeout 30 "$S" run "$R" --ranks 200 --count 200 --timeout 5 2>&1); rc=$?
if grep -q "Sanitizer" <<<"$out"; then echo "skip threads-unavailable (sanitizer build)"
else
  check "[ $rc = 1 ] && grep -q 'cannot start the thread of rank' <<<\"\$out\" && ! grep -q 'digest 0000000000000000' <<<\"\$out\"" \
    "threads-unavailable: exit $rc: $(tail -3 <<<"$out")"
fi

# ---- malformed values are refused, never ignored ---------------------------------------------
for v in 0 abc nan 64K; do
  h "slice-$v" 1 10 "SCHEDC_SLICE='$v'" -- env SCHEDC_SLICE=$v "$S" run "$R" --ranks 2 --count 16
done
h repair-yes 1 10 "SCHEDC_REPAIR='yes': choose 0 or 1" -- env SCHEDC_REPAIR=yes "$S" run "$R" --ranks 2 --count 16
h inject-rank 1 10 "SCHEDC_INJECT kill: rank 99 out of range: this communicator has ranks 0 to 3" -- \
  env SCHEDC_INJECT=kill:99:0 "$S" run "$R" --ranks 4 --count 16
h inject-step 2 10 "SCHEDC_INJECT kill:2:99: step 99 is past the plan's last step" -- \
  env SCHEDC_INJECT=kill:2:99 "$S" run "$R" --ranks 4 --count 16
h inject-flipout-rank 1 10 "SCHEDC_INJECT flipout: rank 5 out of range" -- \
  env SCHEDC_INJECT=flipout:5 "$S" run "$R" --ranks 4 --count 16
h env-rank-wraps 1 10 "SCHEDC_RANK='4294967296': a rank from 0 to 65535" -- \
  env SCHEDC_RANK=4294967296 SCHEDC_NRANKS=2 "$TRAIN" --steps 1
if command -v mpirun >/dev/null; then # kill and delay are CPU-executor faults: refused on mpi, not ignored
  out=$(SCHEDC_INJECT=kill:1:0 timeout 30 mpirun --allow-run-as-root --oversubscribe -np 2 "$S" run "$R" --backend mpi \
        --count 16 2>&1); rc=$?
  if grep -q "has no MPI backend" <<<"$out"; then echo "skip inject-kill-mpi (no MPI in this build)"
  else check "[ $rc != 0 ] && [ $rc != 124 ] && grep -q 'not available on the mpi backend' <<<\"\$out\"" "inject-kill-mpi: exit $rc: $out"
  fi
fi

# ---- unclear messages --------------------------------------------------------------------------
cp good.plan damaged.plan; printf 'X' | dd of=damaged.plan bs=1 seek=0 conv=notrunc 2>/dev/null
h damaged-plan 1 10 "damaged.plan: not a schedc plan file" -- "$S" check damaged.plan --ranks 2

echo "$pass passed, $fail failed"
[ $fail = 0 ]
