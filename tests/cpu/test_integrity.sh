#!/usr/bin/env bash
# test_integrity.sh SCHEDC SCHEDULES_DIR — digest verification: a bit flipped in any one rank's
# result (SCHEDC_INJECT=flipout:R) is detected and the rank named, on every rank, for allreduce,
# allgather and broadcast on threads and shm; with --repair every rank ends with the clean
# run's bits; and clean runs raise no false alarm. Then per-transfer checksums through the CLI
# (the exhaustive flip sweep is test_bitwise flips): a flipped link payload is named on every
# rank with --verify checksum/full, repaired with --repair, on threads and shm; and with
# --verify digest alone a flipped partial sum of a ring goes unnoticed (every rank agrees on the
# wrong bits), which is why checksums exist.
set -u
S=$1; D=$2
pass=0; fail=0
chk() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; echo "$out"; fi; }
for spec in "ring.lua --ranks 4" "tree.lua --ranks 5 -D collective=broadcast -D root=3" \
            "direct.lua --ranks 3 -D collective=allgather --count 999" "halving_doubling.lua --ranks 4 --dtype bf16"; do
  n=$(sed -n 's/.*--ranks \([0-9]*\).*/\1/p' <<<"$spec")
  # shellcheck disable=SC2086
  clean=$(cd "$D" && "$S" run $spec --count 3000 | sed -n 's/^rank 0: digest //p')
  for be in threads shm; do
    for r in $(seq 0 $((n - 1))); do
      # shellcheck disable=SC2086
      out=$(cd "$D" && SCHEDC_INJECT=flipout:$r "$S" run $spec --count 3000 --backend $be --verify digest 2>&1); rc=$?
      chk "[ $rc = 1 ] && [ \$(grep -c 'silent corruption: rank(s) $r hold' <<<\"\$out\") = $n ]" "$spec $be flipout:$r not detected on all ranks"
      # shellcheck disable=SC2086
      out=$(cd "$D" && SCHEDC_INJECT=flipout:$r "$S" run $spec --count 3000 --backend $be --verify digest --repair 2>&1); rc=$?
      chk "[ $rc = 0 ] && [ \$(grep -c '^rank [0-9]*: digest $clean' <<<\"\$out\") = $n ] && grep -q 'repaired from rank' <<<\"\$out\"" "$spec $be flipout:$r not repaired to the clean bits"
    done
  done
  # no false alarm: many clean verified calls
  # shellcheck disable=SC2086
  out=$(cd "$D" && "$S" run $spec --count 300 --verify digest --iters 300 2>&1); rc=$?
  chk "[ $rc = 0 ] && ! grep -q corruption <<<\"\$out\"" "$spec: false alarm in 300 clean calls"
done
clean=$(cd "$D" && "$S" run ring.lua --ranks 4 --count 3000 | sed -n 's/^rank 0: digest //p')
for be in threads shm; do
  for mode in checksum full; do
    out=$(cd "$D" && SCHEDC_INJECT=flip:1:2 "$S" run ring.lua --ranks 4 --count 3000 --backend $be --verify $mode 2>&1); rc=$?
    chk "[ $rc = 1 ] && [ \$(grep -c 'corrupted transfer: the payload rank 1 sent to rank 2 at step 2 (ring.lua:[0-9]*, chunk' <<<\"\$out\") = 4 ]" "$be $mode: flip:1:2 not named on every rank"
    out=$(cd "$D" && SCHEDC_INJECT=flip:1:2 "$S" run ring.lua --ranks 4 --count 3000 --backend $be --verify $mode --repair 2>&1); rc=$?
    chk "[ $rc = 0 ] && [ \$(grep -c '^rank [0-9]*: digest $clean' <<<\"\$out\") = 4 ] && grep -q 'sent again' <<<\"\$out\"" "$be $mode: flip:1:2 not repaired to the clean bits"
  done
  out=$(cd "$D" && SCHEDC_INJECT=flip:1:2 "$S" run ring.lua --ranks 4 --count 3000 --backend $be --verify digest 2>&1); rc=$?
  chk "[ $rc = 0 ] && grep -q 'all 4 ranks agree: yes' <<<\"\$out\" && ! grep -q 'digest $clean' <<<\"\$out\"" "$be digest: a flipped partial sum should pass the digest (same wrong bits everywhere)"
  # a flipped copy of direct.lua's allgather step reaches rank 0 alone: its digest (taken by the
  # copy out of its working buffer) must differ from the others'
  out=$(cd "$D" && SCHEDC_INJECT=flip:1:1 "$S" run direct.lua --ranks 4 --count 3000 --backend $be --verify digest 2>&1); rc=$?
  chk "[ $rc = 1 ] && [ \$(grep -c 'silent corruption: rank(s) 0 hold a result that differs from the majority (3 of 4 ranks agree' <<<\"\$out\") -ge 3 ]" "$be digest: a flipped allgather copy reaching rank 0 alone not detected"
done
out=$(cd "$D" && "$S" run ring.lua --ranks 4 --count 300 --verify full --iters 500 --backend shm 2>&1); rc=$?
chk "[ $rc = 0 ] && ! grep -q corrupt <<<\"\$out\"" "shm: false alarm in 500 clean calls with --verify full"
out=$(SCHEDC_VERIFY=crc "$S" run "$D/ring.lua" --ranks 2 --count 10 2>&1); rc=$?
chk "[ $rc != 0 ] && grep -q 'choose none, digest, checksum, full or exact' <<<\"\$out\"" "SCHEDC_VERIFY=crc is refused with the choices"
out=$(SCHEDC_INJECT=flip:1 "$S" run "$D/ring.lua" --ranks 2 --count 10 2>&1); rc=$?
chk "[ $rc != 0 ] && grep -q 'flip:RANK:STEP' <<<\"\$out\"" "SCHEDC_INJECT=flip:1 is refused with the forms"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
