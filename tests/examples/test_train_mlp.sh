#!/usr/bin/env bash
# test_train_mlp.sh SCHEDC TRAIN_MLP SCHEDULES_DIR — the data-parallel trainer's promises:
# the same weights digest on every run; a run resumed from a step-20 checkpoint ends like a
# straight 40-step run; a corrupted checkpoint is refused; with --order canonical the digest is
# the same for 1, 2, 4 and 8 ranks (and differs without it); an injected bit flip is caught by
# SCHEDC_VERIFY=digest and repaired to the clean digest with SCHEDC_REPAIR=1.
set -u
S=$1; T=$2; D=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
dig() { sed -n 's/^weights digest: //p'; }
ok() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
a=$("$S" launch -n 4 -- "$T" --steps 40 | dig); b=$("$S" launch -n 4 -- "$T" --steps 40 | dig)
ok "[ -n '$a' ] && [ '$a' = '$b' ]" "two runs differ: $a $b"
mkdir "$tmp/ck"
"$S" launch -n 4 -- "$T" --steps 20 --checkpoint "$tmp/ck" >/dev/null
c=$("$S" launch -n 4 -- "$T" --steps 40 --resume "$tmp/ck" | dig)
ok "[ '$c' = '$a' ]" "resumed run ($c) differs from the straight run ($a)"
mkdir "$tmp/bad"; cp "$tmp/ck/ckpt-0000000020.bin" "$tmp/bad/"
printf 'X' | dd of="$tmp/bad/ckpt-0000000020.bin" bs=1 seek=700 conv=notrunc 2>/dev/null
out=$("$S" launch -n 2 --grace 1 -- "$T" --steps 40 --resume "$tmp/bad" 2>&1); rc=$?
ok "[ $rc != 0 ] && grep -q 'ckpt-0000000020.bin: tensor .params. fails its CRC32C' <<<\"\$out\"" "a corrupted checkpoint was not refused"
canon=""
for n in 1 2 4 8; do
  d=$("$S" launch -n $n -- "$T" --steps 40 --microbatches 8 --order canonical --schedule "$D/tree.lua" | dig)
  [ -n "$canon" ] || canon=$d
  ok "[ -n '$d' ] && [ '$d' = '$canon' ]" "canonical digest at $n ranks ($d) differs from 1 rank ($canon)"
done
x=$("$S" launch -n 2 -- "$T" --steps 40 --microbatches 8 | dig); y=$("$S" launch -n 4 -- "$T" --steps 40 --microbatches 8 | dig)
ok "[ '$x' != '$y' ]" "non-canonical order gave the same digest for 2 and 4 ranks (the canonical test would prove nothing)"
out=$(SCHEDC_VERIFY=digest SCHEDC_INJECT=flipout:2 "$S" launch -n 4 --grace 1 -- "$T" --steps 40 2>&1); rc=$?
ok "[ $rc != 0 ] && grep -q 'silent corruption: rank(s) 2' <<<\"\$out\"" "an injected flip was not caught"
r=$(SCHEDC_VERIFY=digest SCHEDC_REPAIR=1 SCHEDC_INJECT=flipout:2 "$S" launch -n 4 -- "$T" --steps 40 2>/dev/null | dig)
ok "[ '$r' = '$a' ]" "repaired run ($r) does not end with the clean digest ($a)"
e=$("$S" launch -n 4 -- "$T" --steps 10 --dtype bf16 | dig); f=$("$S" launch -n 4 -- "$T" --steps 10 --dtype bf16 | dig)
ok "[ -n '$e' ] && [ '$e' = '$f' ]" "bf16 runs differ"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
