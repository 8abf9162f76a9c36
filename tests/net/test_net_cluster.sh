#!/usr/bin/env bash
# test_net_cluster.sh TEST_NET SCHEDC SCHEDULES [core|torchrun] — the net backend on the test cluster's hosts
# (tests/cluster: network namespaces, hostnames, 1 Gbit/s tbf links; no SCHEDC_HOST_ID), ranks
# started by `schedc launch --hosts` through the cluster's host prefix:
#  - bits: test_net at 2 x 2, 3 x 2 and 4 x 1 against the proven trees on every rank, the
#    layout-free digests equal to the threads backend's on one host;
#  - within a host the bytes stay off TCP: a 16 MiB hierarchical allreduce on 2 x 2 moves 32 MiB
#    between each host's two ranks and a few KB over their lo; its cross-host part goes over eth0;
#  - a link taken down mid-job (ip link set eth0 down on h1): every rank fails within the
#    timeout naming a rank of the other host; a host's ranks killed mid-call: every live rank
#    fails naming one of them, long before the timeout;
#  - torchrun --nnodes 2 --no-python (the agent's store bootstraps it): schedc run's digests are
#    the threads backend's; and the schedc torch backend under torchrun --nnodes 2 (DDP,
#    ddp_net.py): over net, the weights of the same job on one host (over shm).
# core: all but torchrun (net.cluster); torchrun: only it (net.cluster_torchrun: each torch
# process's start is seconds, a minute or more in all on a loaded machine); default both.
set -u
TN=$(realpath "$1"); S=$(realpath "$2"); D=$(realpath "$3"); PART=${4:-all}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../skip.sh"
sc_need_net "$S" "$D"
[ -n "${CLUSTER_DIR:-}" ] || exec "$here/../cluster/cluster.sh" -H 4 -S 2 -r 1gbit -t 400 -- bash "$0" "$@"

pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; echo "$out" | tail -25; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
L=("$S" launch --host-cmd "$CLUSTER_ON %h")
T0=$(date +%s)
took() { echo "  ($(( $(date +%s) - T0 )) s so far)"; }

if [ "$PART" != torchrun ]; then
# --- bits on real hosts --------------------------------------------------------------------------
want4=$("$TN" "$D" threads 1x4 quick 2>&1 | grep '^digest' | sort -u)
want6=$("$TN" "$D" threads 3x2 quick 2>&1 | grep '^digest' | sort -u)
for lay in "2x2 h0:2,h1:2" "3x2 h0:2,h1:2,h2:2" "4x1 h0,h1,h2,h3"; do
  set -- $lay
  out=$("${L[@]}" --hosts "$2" -- "$TN" "$D" env "$1" quick 2>&1); rc=$?
  got=$(grep '^digest' <<<"$out" | sort -u)
  want=$want4; [ "$1" = 3x2 ] && want=$want6
  [ $rc = 0 ] && [ -n "$got" ] && [ "$got" = "$want" ] && ok || bad "test_net on the cluster at $1 (digests: $got; threads: $want)"
  echo "$1 on $2: $(grep -c 'cases, 0 failed' <<<"$out") ranks checked every call$(took)"
done

# --- within a host, off TCP ----------------------------------------------------------------------
cnt() { $CLUSTER_ON "$1" cat /proc/net/dev | awk -v d="$2:" '$1 == d { print $2 + $10 }'; }
lo0=$(cnt h0 lo); lo1=$(cnt h1 lo); e0=$(cnt h0 eth0)
out=$("${L[@]}" --hosts h0:2,h1:2 -- "$S" run "$D/hierarchical.lua" --nodes 2 --backend net --count 4M 2>&1) || bad "the hierarchical allreduce"
dlo=$(( $(cnt h0 lo) - lo0 + $(cnt h1 lo) - lo1 )); de=$(( $(cnt h0 eth0) - e0 ))
[ $dlo -lt 262144 ] && [ $de -gt 16777216 ] && ok || bad "16 MiB hierarchical allreduce on 2 x 2: lo carried $dlo bytes (want < 256 KiB), h0's eth0 $de (want > 16 MiB)"
echo "16 MiB hierarchical allreduce on 2 x 2: $dlo bytes over the hosts' lo (32 MiB within each host), $de over h0's eth0"

# --- a link down, a host's ranks killed ------------------------------------------------------------
since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
timeout 60 "${L[@]}" --hosts h0:2,h1:2 -x SCHEDC_TIMEOUT=3 -- "$S" run "$D/ring.lua" --backend net --count 100000 --iters 1000000 >"$w/down" 2>&1 &
lp=$!
sleep 3
t0=$(date +%s%N)
$CLUSTER_ON h1 ip link set eth0 down
wait $lp
ms=$(since "$t0")
$CLUSTER_ON h1 ip link set eth0 up
out=$(cat "$w/down")
[ "$(grep -cE '^rank [01]: error: .*(rank [23] on host h1|rank [23] \(host h1\))' <<<"$out")" = 2 ] &&
  [ "$(grep -cE '^rank [23]: error: .*(rank [01] on host h0|rank [01] \(host h0\))' <<<"$out")" = 2 ] && [ "$ms" -lt 8000 ] && ok ||
  bad "h1's link down: want every rank to name a rank of the other host within the 3 s timeout (ended after $ms ms)"
echo "h1's link down: every rank failed $ms ms later (timeout 3 s)"
timeout 60 "${L[@]}" --hosts h0:2,h1:2 -x SCHEDC_TIMEOUT=30 -- "$S" run "$D/ring.lua" --backend net --count 100000 --iters 1000000 >"$w/kill" 2>&1 &
lp=$!
sleep 3
t0=$(date +%s%N)
ns=scc-$(basename "$CLUSTER_DIR")-h1
for p in $(ip netns pids "$ns"); do
  case "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" in *"schedc run "*) kill -KILL "$p" ;; esac
done
wait $lp
ms=$(since "$t0")
out=$(cat "$w/kill")
[ "$(grep -cE '^rank [01]: error: .*rank [23] ' <<<"$out")" = 2 ] && [ "$ms" -lt 10000 ] && ok ||
  bad "h1's ranks killed: want both ranks of h0 to name one of them, well within the 30 s timeout ($ms ms)"
echo "h1's ranks killed: h0's ranks failed $ms ms later (timeout 30 s)$(took)"

fi

# --- torchrun --nnodes 2 ---------------------------------------------------------------------------
venv=${SCHEDC_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/schedc/venv-torch2}
if [ "$PART" = core ]; then
  :
elif [ -x "$venv/bin/torchrun" ]; then
  tr() { # OUT ARGS...: torchrun on h0 and h1 (2 ranks each), h0's agent serving the store
    local o=$1; shift
    for i in 0 1; do
      $CLUSTER_ON h$i env OMP_NUM_THREADS=1 "$venv/bin/torchrun" --nnodes 2 --nproc-per-node 2 --node-rank $i \
        --master-addr 10.213.0.1 --master-port 29500 "$@" >"$o.$i" 2>&1 &
    done
    wait
  }
  tr "$w/c" --no-python "$S" run "$D/ring.lua" --backend net --count 10007 --dtype bf16
  got=$(grep '^rank' "$w/c.0" | sort); out=$(cat "$w/c.0" "$w/c.1")
  want=$("$S" run "$D/ring.lua" --ranks 4 --count 10007 --dtype bf16 | grep '^rank' | sort)
  [ -n "$got" ] && [ "$got" = "$want" ] && ok || bad "torchrun --nnodes 2 --no-python schedc run --backend net: $got"
  echo "torchrun --nnodes 2 --no-python: the threads backend's digests$(took)"
  export SCHEDC_LIBRARY=$(dirname "$S")/lib/libschedc.so PYTHONPATH="$here/../../python"
  tr "$w/p" "$here/ddp_net.py" "$w/two"
  out=$(cat "$w/p.0" "$w/p.1")
  for r in 0 1 2 3; do # the same job on one host: shm
    env RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 OMP_NUM_THREADS=1 \
      "$venv/bin/python" "$here/ddp_net.py" "$w/one" >"$w/one.$r" 2>&1 &
  done
  wait
  two=$(cat "$w"/two.rank* 2>/dev/null | sort); one=$(cat "$w"/one.rank* 2>/dev/null | sort)
  [ "$(cut -d' ' -f2 <<<"$two" | sort -u)" = net ] && [ "$(cut -d' ' -f2 <<<"$one" | sort -u)" = shm ] &&
    [ "$(cut -d' ' -f3 <<<"$two" | sort -u | wc -l)" = 1 ] && [ "$(cut -d' ' -f1,3 <<<"$two")" = "$(cut -d' ' -f1,3 <<<"$one")" ] && ok ||
    bad "DDP under torchrun --nnodes 2 (net) against one host (shm): $(echo $two) / $(echo $one)"
  echo "torchrun --nnodes 2, schedc backend: DDP weights $(cut -d' ' -f2,3 <<<"$two" | sort -u | paste -sd' ') = one host's $(cut -d' ' -f2,3 <<<"$one" | sort -u | paste -sd' ')$(took)"
else
  sc_require_tools && bad "no torch 2.x venv at $venv (tests/python/venv.sh)" || echo "[SKIP part] no torch 2.x venv: torchrun not tried"
fi

echo "$pass passed, $fail failed"
[ $fail = 0 ]
