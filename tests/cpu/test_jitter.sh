#!/usr/bin/env bash
# test_jitter.sh SCHEDC SCHEDULES_DIR — identical bits whatever the timing: random per-step delays
# (SCHEDC_INJECT=jitter), slice sizes, backends and repeated iterations all give one digest.
set -u
S=$1; D=$2
pass=0; fail=0
for spec in "ring.lua --ranks 4" "tree.lua --ranks 5 -D chunks=4" "direct.lua --ranks 3" "halving_doubling.lua --ranks 6" \
            "hierarchical.lua --ranks 6 --nodes 2"; do
  # shellcheck disable=SC2086
  base=$(cd "$D" && "$S" run $spec --count 100003 --dtype bf16 --op sum | sed -n 's/^rank 0: digest //p')
  [ -n "$base" ] || { echo "FAIL $spec: no baseline"; fail=$((fail + 1)); continue; }
  for seed in 1 2 3; do
    for slice in 256 4096 1048576; do
      for be in threads shm; do
        # shellcheck disable=SC2086
        out=$(cd "$D" && SCHEDC_INJECT=jitter:$seed:300 "$S" run $spec --count 100003 --dtype bf16 --op sum \
              --slice $slice --backend $be --iters 3)
        n=$(grep -c "digest $base" <<<"$out")
        want=$(grep -c "^rank" <<<"$out")
        if [ "$n" = "$want" ] && grep -q "identical bits every time: yes" <<<"$out"; then pass=$((pass + 1));
        else fail=$((fail + 1)); echo "FAIL $spec seed=$seed slice=$slice $be"; echo "$out"; fi
      done
    done
  done
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
