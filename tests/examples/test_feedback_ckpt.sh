#!/usr/bin/env bash
# test_feedback_ckpt.sh SCHEDC TRAIN_MLP — error feedback's residuals go into checkpoints
# (docs/compression.md "Error feedback"): train_mlp --feedback (--wire q8 at 4 ranks, --topk 0.05 at
# 3) checkpointed at step 15 and resumed ends with the straight 30-step run's weights digest, which
# differs from the run without --feedback (so residuals matter); a flipped bit in a rank's residual
# blob is refused by name and the checkpoint before it used; resuming at another rank count,
# without --feedback from a checkpoint with residuals, or with it from one without, is a usage error
# (2) naming the reason.
set -u
S=$1; T=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
dig() { sed -n 's/^weights digest: //p'; }
ok() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
run() { timeout 120 "$S" launch --grace 60 "$@" 2>"$tmp/err"; }
for spec in "4 --wire q8" "3 --topk 0.05"; do
  set -- $spec; n=$1; shift; X="$* --feedback"; ck="$tmp/ck$n"
  W=$(run -n $n -- "$T" --steps 30 $X | dig)
  P=$(run -n $n -- "$T" --steps 30 $* | dig)
  ok "[ -n '$W' ] && [ '$W' != '$P' ]" "$X: straight $W, without --feedback $P"
  run -n $n -- "$T" --steps 15 $X --checkpoint "$ck" --every 5 >/dev/null
  d=$(run -n $n -- "$T" --steps 30 $X --resume "$ck" | dig)
  ok "[ '$d' = '$W' ]" "$X resumed at step 15: $d, straight $W"
  # table entry 5 is residual.1 (meta, params, momentum, feedback, residual.0, residual.1): its offset
  f="$ck/ckpt-0000000015.bin"
  off=$(od -An -tu8 -j $((32 + 5 * 96 + 64)) -N8 "$f" | tr -d ' ')
  cp -r "$ck" "$tmp/flip"
  printf '\x40' | dd of="$tmp/flip/ckpt-0000000015.bin" bs=1 seek=$((off + 13)) conv=notrunc 2>/dev/null
  d=$(run -n $n -- "$T" --steps 30 $X --resume "$tmp/flip" | dig)
  ok "[ '$d' = '$W' ] && grep -q \"refusing checkpoint $tmp/flip/ckpt-0000000015.bin: tensor 'residual.1' fails its CRC32C\" $tmp/err && grep -q 'resuming from $tmp/flip/ckpt-0000000010.bin' $tmp/err" "$X, a flipped residual bit: $d; $(cat $tmp/err)"
  rm -rf "$tmp/flip"
  run -n 1 -- "$T" --steps 30 $X --microbatches $n --resume "$ck" >/dev/null; rc=$? # micro-batches as made
  ok "[ $rc = 2 ] && grep -q 'holds the error-feedback residuals of $n ranks; resuming on 1 would lose' $tmp/err" "$X at another rank count: rc $rc; $(cat $tmp/err)"
  run -n $n -- "$T" --steps 30 $* --resume "$ck" >/dev/null; rc=$?
  ok "[ $rc = 2 ] && grep -q 'resume with --feedback' $tmp/err" "$X resumed without --feedback: rc $rc; $(cat $tmp/err)"
done
run -n 2 -- "$T" --steps 10 --wire q8 --checkpoint "$tmp/plain" >/dev/null
run -n 2 -- "$T" --steps 20 --wire q8 --feedback --resume "$tmp/plain" >/dev/null; rc=$?
ok "[ $rc = 2 ] && grep -q 'holds no error-feedback residuals' $tmp/err" "--feedback from a checkpoint without residuals: rc $rc; $(cat $tmp/err)"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
