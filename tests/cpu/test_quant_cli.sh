#!/usr/bin/env bash
# test_quant_cli.sh SCHEDC SCHEDULES_DIR [TRAIN_MLP] — compression end to end (docs/compression.md):
# `schedc run --wire q8|q16` and `--topk` give one digest for every schedule (ring, tree, binomial
# tree, direct, halving_doubling, hierarchical) and backend (threads, shm, and, on a sample of the
# schedules, mpi when mpirun is here and net when schedc has it) at 4 ranks; the plain sums of ring and tree differ (so the
# comparison can fail); bad option combinations are usage errors (2). With TRAIN_MLP:
# `train_mlp --microbatches 12 --order exact --wire q8` (and q16) ends with one weights digest on
# 1 to 6 ranks (each micro-batch leaf quantized on its own; 5 ranks hold blocks of 3, 3, 2, 2, 2
# leaves, whose words are made again for L = 12), and --wire q8 with plain
# per-rank sums differs between 3 and 4 ranks.
set -u
S=$1; D=$2; TR=${3:-}
pass=0; fail=0
digest() { "$S" run "$@" 2>&1 | sed -n 's/^rank 0: digest //p'; }
NET=1 # the net backend built (UCX)? Else its rows are left out here; net's own tests say why
env -u MASTER_ADDR SCHEDC_RANK=0 SCHEDC_NRANKS=1 "$S" run "$D/ring.lua" --backend net --count 1 2>&1 | grep -q "no net backend" && NET=
for args in "--dtype f32 --op sum --wire q8" "--dtype bf16 --op avg --wire q16" "--dtype f32 --op sum --wire q16" \
            "--dtype f16 --op avg --topk 2%" "--dtype f32 --op sum --topk 0.3"; do
  want=""
  for b in threads shm mpi net; do
    for f in "ring.lua" "tree.lua" "tree.lua -D shape=binomial" "direct.lua" "halving_doubling.lua" "hierarchical.lua --nodes 2"; do
      if [ $b = net ]; then # 4 ranks by schedc launch over the net backend (UCX), where it is built
        [ -n "$NET" ] || continue
        case "$f" in ring.lua|"hierarchical.lua --nodes 2") ;; *) continue ;; esac # a sample, as mpi's
        got=$(SCHEDC_JOB=quant_cli timeout 120 bash "$(dirname "$0")/../net/launch_net.sh" "$S" 4 "$S" run $D/$f --count 30000 $args --backend net 2>&1 | sed -n 's/^rank 0: digest //p')
      elif [ $b = mpi ]; then
        command -v mpirun >/dev/null || continue
        case "$f" in ring.lua|"hierarchical.lua --nodes 2") ;; *) continue ;; esac # a sample: MPI starts are slow
        got=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 4 "$S" run $D/$f --ranks 4 --count 30000 $args --backend mpi 2>&1 | sed -n 's/^rank 0: digest //p')
      else
        got=$(timeout 120 bash -c "$(printf '%q ' "$S") run $D/$f --ranks 4 --count 30000 $args --backend $b" 2>&1 | sed -n 's/^rank 0: digest //p')
      fi
      [ -z "$want" ] && want=$got
      if [ -n "$got" ] && [ "$got" = "$want" ]; then pass=$((pass + 1)); else echo "FAIL $b $f $args: '$got' vs '$want'"; fail=$((fail + 1)); fi
    done
  done
  echo "$args: $want"
done
a=$(digest $D/ring.lua --ranks 4 --count 30000); b=$(digest $D/tree.lua --ranks 4 --count 30000)
if [ -n "$a" ] && [ "$a" != "$b" ]; then pass=$((pass + 1)); else echo "FAIL: ring and tree agree without --wire ($a)"; fail=$((fail + 1)); fi
for bad in "--wire q4" "--wire q8 --exact" "--wire q8 --topk 0.1" "--topk 0" "--topk 1.5" "--topk 5%x"; do
  "$S" run $D/ring.lua --ranks 2 $bad >/dev/null 2>&1
  if [ $? = 2 ]; then pass=$((pass + 1)); else echo "FAIL: '$bad' is not a usage error"; fail=$((fail + 1)); fi
done
out=$("$S" run $D/ring.lua --ranks 2 -D collective=allgather --wire q8 2>&1)
if [ $? = 2 ] && [[ "$out" == *"--wire takes an allreduce, reduce_scatter or reduce plan, not allgather"* ]]; then pass=$((pass + 1)); else echo "FAIL: --wire on allgather: $out"; fail=$((fail + 1)); fi
out=$("$S" run $D/ring.lua --ranks 2 --wire q8 --op max 2>&1)
if [ $? = 1 ] && [[ "$out" == *"wire q8 takes op sum or avg, not max"* ]]; then pass=$((pass + 1)); else echo "FAIL: --wire q8 --op max: $out"; fail=$((fail + 1)); fi
if [ -n "$TR" ]; then
  for w in q8 q16; do
    want=""
    for n in 1 2 3 4 5 6; do
      d=$(timeout 300 "$S" launch -n $n -- "$TR" --steps 30 --microbatches 12 --order exact --wire $w | sed -n 's/^weights digest: //p')
      [ -z "$want" ] && want=$d
      if [ -n "$d" ] && [ "$d" = "$want" ]; then pass=$((pass + 1)); else echo "FAIL train_mlp --wire $w at $n ranks: '$d' vs '$want'"; fail=$((fail + 1)); fi
    done
    echo "train_mlp --microbatches 12 --order exact --wire $w: $want"
  done
  x=$(timeout 300 "$S" launch -n 3 -- "$TR" --steps 30 --microbatches 12 --wire q8 | sed -n 's/^weights digest: //p')
  y=$(timeout 300 "$S" launch -n 4 -- "$TR" --steps 30 --microbatches 12 --wire q8 | sed -n 's/^weights digest: //p')
  if [ -n "$x" ] && [ "$x" != "$y" ]; then pass=$((pass + 1)); else echo "FAIL: 3 and 4 ranks agree without leaves"; fail=$((fail + 1)); fi
fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
