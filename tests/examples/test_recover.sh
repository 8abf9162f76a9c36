#!/usr/bin/env bash
# test_recover.sh SCHEDC TRAIN_MLP SCHEDULES_DIR — train_mlp loses ranks and still ends with the
# weights of the run that never failed (docs/recovery.md). Against the straight 4-rank run's digest
# W (--order exact, 12 micro-batches, 40 steps):
#   restart: a checkpoint made at 4 ranks resumed at 3, 5 and 7; the canonical order resumed at
#   another power of two; a corrupt (bit flip), truncated or header-damaged newest checkpoint
#   refused naming the file and what failed, the one before it used; none good: a refusal; a rank
#   killed inside a checkpoint write: no checkpoint of that step, its temporary file removed later,
#   the resumed run W; another micro-batch count refused;
#   shrink (--on-failure shrink): a rank killed inside the gradient collective at every plan step,
#   before a training step, inside a checkpoint write, and two ranks at once: every run ends with W
#   and the survivors' count is printed; shrink without exact is a usage error.
set -u
S=$1; T=$2; D=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
dig() { sed -n 's/^weights digest: //p'; }
ok() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
X="--steps 40 --microbatches 12 --order exact"
run() { timeout 120 "$S" launch --grace 60 "$@" 2>"$tmp/err"; }
W=$(run -n 4 -- "$T" $X | dig)
ok "[ -n '$W' ]" "no straight digest"

# ---- restart from a checkpoint, at another rank count ----
run -n 4 -- "$T" $X --steps 20 --checkpoint "$tmp/ck" --every 5 --keep 3 >/dev/null
ok "[ \"\$(ls $tmp/ck)\" = \"\$(printf 'ckpt-0000000010.bin\nckpt-0000000015.bin\nckpt-0000000020.bin')\" ]" "the last 3 checkpoints are not what is kept: $(ls $tmp/ck | tr '\n' ' ')"
for n in 3 5 7; do
  d=$(run -n $n -- "$T" $X --resume "$tmp/ck" | dig)
  ok "[ '$d' = '$W' ]" "resumed at $n ranks: $d, straight $W"
done
C=$(run -n 2 -- "$T" --steps 40 --microbatches 8 --order canonical --schedule "$D/tree.lua" | dig)
run -n 2 -- "$T" --steps 20 --microbatches 8 --order canonical --schedule "$D/tree.lua" --checkpoint "$tmp/cc" >/dev/null
for n in 1 4 8; do
  d=$(run -n $n -- "$T" --steps 40 --microbatches 8 --order canonical --schedule "$D/tree.lua" --resume "$tmp/cc" | dig)
  ok "[ -n '$C' ] && [ '$d' = '$C' ]" "canonical resumed at $n ranks: $d, straight $C"
done

# ---- checkpoints that cannot lie: the newest refused by name and reason, the one before used ----
cp -r "$tmp/ck" "$tmp/flip"
printf 'X' | dd of="$tmp/flip/ckpt-0000000020.bin" bs=1 seek=700 conv=notrunc 2>/dev/null
d=$(run -n 3 -- "$T" $X --resume "$tmp/flip" | dig)
ok "[ '$d' = '$W' ] && grep -q 'refusing checkpoint $tmp/flip/ckpt-0000000020.bin: tensor .params. fails its CRC32C' $tmp/err && grep -q 'resuming from $tmp/flip/ckpt-0000000015.bin' $tmp/err" "a flipped bit: $d; $(cat $tmp/err)"
cp -r "$tmp/ck" "$tmp/cut"
truncate -s 1000 "$tmp/cut/ckpt-0000000020.bin"
d=$(run -n 4 -- "$T" $X --resume "$tmp/cut" | dig)
ok "[ '$d' = '$W' ] && grep -q 'ckpt-0000000020.bin: truncated or cut' $tmp/err" "a truncated checkpoint: $d; $(cat $tmp/err)"
cp -r "$tmp/ck" "$tmp/head"
printf 'Z' | dd of="$tmp/head/ckpt-0000000020.bin" bs=1 seek=40 conv=notrunc 2>/dev/null # a blob's name in the table
d=$(run -n 2 -- "$T" $X --resume "$tmp/head" | dig)
ok "[ '$d' = '$W' ] && grep -q 'ckpt-0000000020.bin: the file fails its CRC32C' $tmp/err" "a damaged table: $d; $(cat $tmp/err)"
mkdir "$tmp/none"; cp "$tmp/cut/ckpt-0000000020.bin" "$tmp/none/"
run -n 2 -- "$T" $X --resume "$tmp/none" >/dev/null; rc=$?
ok "[ $rc != 0 ] && grep -q 'no good checkpoint there' $tmp/err" "no good checkpoint was not refused (rc $rc)"
run -n 2 -- "$T" --steps 40 --microbatches 6 --order exact --resume "$tmp/ck" >/dev/null; rc=$?
ok "[ $rc = 2 ] && grep -q 'made with 12 micro-batches' $tmp/err" "another micro-batch count was not refused (rc $rc)"

# ---- a rank killed inside a checkpoint write, then a restart ----
run -n 4 -- "$T" $X --checkpoint "$tmp/kw" --every 5 --die 0:10:ckpt >/dev/null; rc=$?
ok "[ $rc = 137 ] && [ ! -e $tmp/kw/ckpt-0000000010.bin ] && ls -a $tmp/kw | grep -q '^.ckpt-0000000010.bin.tmp.'" "killed in a checkpoint write: rc $rc, $(ls -a $tmp/kw | tr '\n' ' ')"
d=$(run -n 3 -- "$T" $X --resume "$tmp/kw" --checkpoint "$tmp/kw" | dig)
ok "[ '$d' = '$W' ] && ! ls -a $tmp/kw | grep -q tmp" "resumed after a death in a checkpoint write: $d; $(ls -a $tmp/kw | tr '\n' ' ')"

# ---- shrink in place: the survivors redo the step with the lost micro-batches spread over them ----
for s in 0 1 2 3 4 5; do # the 4-rank ring has 6 steps
  r=$(( (s + 1) % 4 ))
  d=$(SCHEDC_INJECT=kill:$r:$s run -n 4 -- "$T" $X --on-failure shrink | dig)
  ok "[ '$d' = '$W' ] && grep -q '3 ranks go on from step 0' $tmp/err" "rank $r killed at plan step $s, shrunk: $d; $(tail -3 $tmp/err)"
done
d=$(run -n 5 -- "$T" $X --on-failure shrink --die 2:7 | dig)
ok "[ '$d' = '$W' ] && grep -q '4 ranks go on from step 7' $tmp/err" "rank 2 killed before step 7, shrunk: $d; $(tail -3 $tmp/err)"
d=$(run -n 4 -- "$T" $X --on-failure shrink --checkpoint "$tmp/sk" --die 0:10:ckpt | dig)
ok "[ '$d' = '$W' ] && [ ! -e $tmp/sk/ckpt-0000000010.bin ] && [ -e $tmp/sk/ckpt-0000000040.bin ]" "rank 0 killed in a checkpoint write, shrunk: $d; $(ls $tmp/sk | tr '\n' ' ')"
d=$(run -n 2 -- "$T" $X --resume "$tmp/sk" | dig)
ok "[ '$d' = '$W' ]" "the shrunk run's last checkpoint: $d"
d=$(run -n 6 -- "$T" $X --on-failure shrink --die 1:5 --die 3:5 | dig)
ok "[ '$d' = '$W' ] && grep -q '4 ranks go on from step 5' $tmp/err" "ranks 1 and 3 killed before step 5, shrunk: $d; $(tail -3 $tmp/err)"
d=$(SCHEDC_INJECT=kill:1:1,kill:2:1 run -n 5 -- "$T" $X --on-failure shrink | dig)
ok "[ '$d' = '$W' ] && grep -q '3 ranks go on from step 0' $tmp/err" "ranks 1 and 2 killed at plan step 1, shrunk: $d; $(tail -3 $tmp/err)"
run -n 2 -- "$T" --steps 4 --on-failure shrink >/dev/null; rc=$?
ok "[ $rc = 2 ] && grep -q 'needs --order exact' $tmp/err" "shrink without exact was not refused (rc $rc)"
echo "weights of the run that never failed: $W"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
