#!/usr/bin/env bash
# test_net_shrink_train.sh SCHEDC TRAIN_MLP SCHEDULES — train_mlp --on-failure shrink on the net
# backend (schedc launch, SCHEDC_BACKEND=net: bootstrapped at MASTER_ADDR:MASTER_PORT): a rank
# killed inside the gradient allreduce (SCHEDC_INJECT), and two ranks at once (--die), on one host
# and on two pretend hosts (UCX over TCP between them): every run ends with the weights digest of
# the straight 4-rank run on shm (--order exact, 12 micro-batches), and the survivors' count is
# printed; no rank's sanitizer reports (the ASan tree).
set -u
S=$1; T=$2; D=$3
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../skip.sh"
sc_need_net "$S" "$D"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
dig() { sed -n 's/^weights digest: //p'; }
# a pass also needs no sanitizer report from any rank (the ASan tree runs this too)
ok() { if eval "$1" && ! grep -qE 'Sanitizer|runtime error:' "$tmp/err"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; tail -8 "$tmp/err"; fi; }
X="--steps 40 --microbatches 12 --order exact"
W=$(timeout 120 "$S" launch --grace 60 -n 4 -- "$T" $X 2>"$tmp/err" | dig)
ok "[ -n '$W' ]" "no straight digest"
net() { SCHEDC_BACKEND=net timeout 120 bash "$here/launch_net.sh" "$S" "$@" 2>"$tmp/err"; }
hosts() { echo "export SCHEDC_HOST_ID=h\$((SCHEDC_RANK / $1)); exec \"\$@\""; }
d=$(SCHEDC_INJECT=kill:2:3 net 4 "$T" $X --on-failure shrink | dig)
ok "[ '$d' = '$W' ] && grep -q '3 ranks go on' $tmp/err && grep -q 'rank 2 (pid [0-9]* on host' $tmp/err" "net, rank 2 killed in step 3 of an allreduce: $d, straight $W"
d=$(SCHEDC_INJECT=kill:0:1 net 4 bash -c "$(hosts 2)" _ "$T" $X --on-failure shrink | dig)
ok "[ '$d' = '$W' ] && grep -q '3 ranks go on' $tmp/err" "net, 2 pretend hosts, rank 0 killed in an allreduce: $d, straight $W"
d=$(net 5 bash -c "$(hosts 3)" _ "$T" $X --on-failure shrink --die 1:5 --die 3:5 | dig)
ok "[ '$d' = '$W' ] && grep -q '3 ranks go on from step 5' $tmp/err" "net, 2 pretend hosts, ranks 1 and 3 killed at once: $d, straight $W"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
