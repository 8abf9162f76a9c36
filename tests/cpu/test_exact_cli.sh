#!/usr/bin/env bash
# test_exact_cli.sh SCHEDC SCHEDULES_DIR [TRAIN_MLP] — `schedc run --exact` gives one digest for every
# schedule (ring, tree, binomial tree, direct, halving_doubling, hierarchical) and backend
# (threads, shm, and mpi when mpirun is here) at 4 ranks, f32 sum and bf16 avg; without --exact
# ring and tree differ (so the comparison can fail); --exact with --op max is a usage error (2).
# With TRAIN_MLP: `train_mlp --microbatches 12 --order exact` ends with one weights digest on 1,
# 2, 3, 4 and 6 ranks (exact leaves), and without --order exact 3 and 4 ranks differ.
set -u
S=$1; D=$2; TR=${3:-}
pass=0; fail=0
digest() { "$S" run "$@" 2>&1 | sed -n 's/^rank 0: digest //p'; }
for args in "--dtype f32 --op sum" "--dtype bf16 --op avg"; do
  want=""
  for b in threads shm mpi; do
    for f in "ring.lua" "tree.lua" "tree.lua -D shape=binomial" "direct.lua" "halving_doubling.lua" "hierarchical.lua --nodes 2"; do
      if [ $b = mpi ]; then
        command -v mpirun >/dev/null || continue
        got=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 "$S" run $D/$f --ranks 4 --count 30000 $args --exact --backend mpi 2>&1 | sed -n 's/^rank 0: digest //p')
      else
        got=$(timeout 120 bash -c "$(printf '%q ' "$S") run $D/$f --ranks 4 --count 30000 $args --exact --backend $b" 2>&1 | sed -n 's/^rank 0: digest //p')
      fi
      [ -z "$want" ] && want=$got
      if [ -n "$got" ] && [ "$got" = "$want" ]; then pass=$((pass + 1)); else echo "FAIL $b $f $args: '$got' vs '$want'"; fail=$((fail + 1)); fi
    done
  done
  echo "$args --exact: $want"
done
a=$(digest $D/ring.lua --ranks 4 --count 30000); b=$(digest $D/tree.lua --ranks 4 --count 30000)
if [ -n "$a" ] && [ "$a" != "$b" ]; then pass=$((pass + 1)); else echo "FAIL: ring and tree agree without --exact ($a)"; fail=$((fail + 1)); fi
"$S" run $D/ring.lua --ranks 2 --exact --op max >/dev/null 2>&1
if [ $? = 2 ]; then pass=$((pass + 1)); else echo "FAIL: --exact --op max is not a usage error"; fail=$((fail + 1)); fi
if [ -n "$TR" ]; then
  want=""
  for n in 1 2 3 4 6; do
    d=$(timeout 300 "$S" launch -n $n -- "$TR" --steps 40 --microbatches 12 --order exact | sed -n 's/^weights digest: //p')
    [ -z "$want" ] && want=$d
    if [ -n "$d" ] && [ "$d" = "$want" ]; then pass=$((pass + 1)); else echo "FAIL train_mlp exact at $n ranks: '$d' vs '$want'"; fail=$((fail + 1)); fi
  done
  echo "train_mlp --microbatches 12 --order exact: $want"
  x=$(timeout 300 "$S" launch -n 3 -- "$TR" --steps 40 --microbatches 12 | sed -n 's/^weights digest: //p')
  y=$(timeout 300 "$S" launch -n 4 -- "$TR" --steps 40 --microbatches 12 | sed -n 's/^weights digest: //p')
  if [ -n "$x" ] && [ "$x" != "$y" ]; then pass=$((pass + 1)); else echo "FAIL: 3 and 4 ranks agree without --order exact"; fail=$((fail + 1)); fi
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
