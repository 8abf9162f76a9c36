#!/usr/bin/env bash
# test_exact_inject_mpi.sh SCHEDC SCHEDULES_DIR — exact mode's identity check on the MPI backend
# (SCHEDC_VERIFY=exact, docs/determinism.md "Exact integrity"): on a ring of 3 under mpirun, a
# flip:R:S (rank 1 at each of its 4 steps; ranks 0 and 2 at step 0) and an arith:R:S with a reduce
# to land in (steps 0 and 1, the reduce-scatter half, where each rank receives a reduce) fail on
# every rank naming the check; arith at steps 2 and 3 (copies only) leaves the clean digest. And what the
# CRCs cannot see: a plain sum under checksums with an arith flip succeeds with other bits.
set -u
S=$1; D=$2
. "$(dirname "$0")/../skip.sh"
sc_need_mpi "$S" "$D"
MPI="mpirun --allow-run-as-root --oversubscribe -np 3"
R=(run "$D/ring.lua" --backend mpi --count 10007)
pass=0; fail=0
chk() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; echo "$out"; fi; }
clean=$($MPI "$S" "${R[@]}" --exact --verify exact 2>&1 </dev/null | grep '^rank' | sort)
out=$clean
chk "[ \$(grep -c 'digest' <<<\"\$clean\") = 3 ]" "clean exact call under SCHEDC_VERIFY=exact"
# rank 1 at every step, ranks 0 and 2 at step 0 (every (rank, step) of the ring runs on threads
# and shm in test_exact_inject.c; here the mpi backend's own hook and check, in fewer launches)
for kind in flip arith; do
  for rs in 1:0 1:1 1:2 1:3 0:0 2:0; do
    r=${rs%:*} s=${rs#*:}
    {
      out=$($MPI -x SCHEDC_INJECT=$kind:$r:$s -x SCHEDC_DEBUG=error "$S" "${R[@]}" --exact --verify exact 2>&1 </dev/null)
      if [ $kind = flip ] || [ $s -lt 2 ]; then
        chk "[ \$(grep -c '^rank [0-2]: error: allreduce: exact-mode check of call 2 failed' <<<\"\$out\") = 3 ]" \
          "$kind:$r:$s not caught on every rank"
      else
        chk "[ \"\$(grep '^rank' <<<\"\$out\" | sort)\" = \"\$clean\" ]" "$kind:$r:$s (no reduce to land in) changed the bits"
      fi
    }
  done
done
plain=$($MPI "$S" "${R[@]}" --verify checksum 2>&1 </dev/null | grep '^rank' | sort)
out=$($MPI -x SCHEDC_INJECT=arith:1:0:30 -x SCHEDC_DEBUG=error "$S" "${R[@]}" --verify checksum 2>&1 </dev/null)
chk "grep -q 'all 3 ranks agree: yes' <<<\"\$out\" && [ \"\$(grep '^rank' <<<\"\$out\" | sort)\" != \"\$plain\" ]" \
  "arith under checksums alone: expected success with other bits"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
