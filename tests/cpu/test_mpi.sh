#!/usr/bin/env bash
# test_mpi.sh SCHEDC SCHEDULES_DIR — the MPI transport under `mpirun` gives, digest for digest,
# the bits of the threads backend (which test_bitwise checks against the independent reference),
# for every shipped schedule, several collectives, dtypes and odd counts; and per-transfer
# checksums over MPI: a flipped payload is named on every rank, and --repair (the call runs
# again) ends with the clean bits.
set -u
S=$1; D=$2
. "$(dirname "$0")/../skip.sh"
sc_need_mpi "$S" "$D"
MPI="mpirun --allow-run-as-root --oversubscribe -np"
pass=0; fail=0
while read -r n file args; do
  for dt in f32 bf16 i64; do
    # shellcheck disable=SC2086
    want=$("$S" run "$D/$file" --ranks "$n" --dtype $dt --count 10007 $args | grep '^rank' | sort)
    # shellcheck disable=SC2086
    got=$($MPI "$n" "$S" run "$D/$file" --backend mpi --dtype $dt --count 10007 $args 2>&1 </dev/null | grep '^rank' | sort)
    if [ -n "$want" ] && [ "$want" = "$got" ]; then pass=$((pass + 1)); else
      fail=$((fail + 1)); echo "FAIL: $file -np $n $dt $args"; echo "threads: $want"; echo "mpi: $got"; fi
  done
done <<'LIST'
4 ring.lua
3 ring.lua -D collective=reduce_scatter --op max --count 10008
4 tree.lua -D chunks=3
3 tree.lua -D collective=broadcast -D root=2
4 direct.lua -D collective=reduce -D root=1 --op avg
4 halving_doubling.lua
4 hierarchical.lua --nodes 2 -D collective=allgather --count 10008
LIST
chk() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; echo "$out"; fi; }
clean=$("$S" run "$D/halving_doubling.lua" --ranks 4 --count 3001 | grep '^rank' | sort)
out=$($MPI 4 -x SCHEDC_INJECT=flip:2:1 "$S" run "$D/halving_doubling.lua" --backend mpi --count 3001 --verify full 2>&1 </dev/null)
chk "[ \$(grep -c 'corrupted transfer: the payload rank 2 sent to rank [0-9] at step 1 ' <<<\"\$out\") = 4 ]" "mpi flip:2:1 not named on every rank"
out=$($MPI 4 -x SCHEDC_INJECT=flip:2:1 "$S" run "$D/halving_doubling.lua" --backend mpi --count 3001 --verify full --repair 2>&1 </dev/null)
chk "[ \"\$(grep '^rank' <<<\"\$out\" | sort)\" = \"\$clean\" ] && grep -q 'the call runs again' <<<\"\$out\"" "mpi flip:2:1 not repaired to the clean bits"
# Ranks verifying differently: named as such on every rank (before, a wait that timed out or a
# message about an internal allgather), and which field differs is said (MPMD: one env per rank).
out=$($MPI 1 -x SCHEDC_VERIFY=digest "$S" run "$D/ring.lua" --backend mpi --count 100 : \
      -np 1 -x SCHEDC_VERIFY=none "$S" run "$D/ring.lua" --backend mpi --count 100 2>&1 </dev/null)
chk "[ \$(grep -c 'disagree on the verification (SCHEDC_VERIFY, SCHEDC_REPAIR) of call 1 ' <<<\"\$out\") = 2 ] && grep -q 'rank 0: SCHEDC_VERIFY=digest; rank 1: SCHEDC_VERIFY=none' <<<\"\$out\"" "mpi: ranks with different SCHEDC_VERIFY not named"
out=$($MPI 1 "$S" run "$D/ring.lua" --backend mpi --count 100 : -np 1 "$S" run "$D/ring.lua" --backend mpi --count 101 2>&1 </dev/null)
chk "grep -q 'disagree on the count of call 1 (rank [01]: 10[01]; rank [01]: 10[01])' <<<\"\$out\"" "mpi: a count mismatch not named as the count"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
