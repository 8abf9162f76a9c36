#!/usr/bin/env bash
# test_cluster.sh TRAIN_MLP — the test cluster itself (cluster.sh): distinct hostnames that
# resolve, a private /dev/shm per host (an shm job split across two hosts never meets; on one
# host it runs), the links' measured TCP rate near the shaped rate and bounded by it in each
# direction (a host's download shared by two senders, its upload by two streams), the rank
# launcher's variables, two clusters at once that never meet, --timeout, a teardown that leaves
# nothing on every exit path, a killed run swept, and the skip when not root.
set -u
TRAIN=$1
here=$(cd "$(dirname "$0")" && pwd)
C=$here/cluster.sh
RATE_PY=$here/tcp_rate.py
. "$here/../skip.sh"
PY=/usr/bin/python3
[ -x $PY ] || PY=$(command -v python3) || sc_skip_tool python3 "tcp_rate.py measures the links"
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Nothing of a run left: its folder, namespaces, processes.
left() { # RUN-DIR
  local run=${1##*/} out=""
  [ -e "$1" ] && out="$out folder $1;"
  ip netns list | grep -q -- "-$run-" && out="$out namespaces $(ip netns list | grep -- "-$run-" | tr '\n' ' ');"
  echo "$out"
}

# --- 1. hosts, names, /dev/shm, links (2 x 1 at 1gbit; 3 x 1 for the shared links) -------------
out=$("$C" -H 3 -S 1 -r 1gbit -t 60 -- bash -c '
  echo "dir $CLUSTER_DIR"
  for h in $CLUSTER_HOSTS; do echo "name $h $($CLUSTER_ON $h hostname)"; done
  echo "resolve $($CLUSTER_ON h0 getent hosts h2 | cut -d" " -f1)"
  $CLUSTER_ON h0 sh -c "echo x >/dev/shm/cluster-test-$$"
  echo "shm h0 $($CLUSTER_ON h0 ls /dev/shm | grep -c cluster-test-$$) h1 $($CLUSTER_ON h1 ls /dev/shm | grep -c cluster-test-$$) root $(ls /dev/shm | grep -c cluster-test-$$)"
  echo "nics $($CLUSTER_ON h1 ls /sys/class/net | tr "\n" " ")"
  P='"$PY"' T='"$RATE_PY"'
  # one stream h0 -> h1
  $CLUSTER_ON h1 $P $T recv 5001 1 >$0.one & sleep 0.3
  $CLUSTER_ON h0 $P $T send 10.213.0.2 5001 40; wait
  # h0 and h2 -> h1 (h1 download) at once
  $CLUSTER_ON h1 $P $T recv 5002 2 >$0.into & sleep 0.3
  $CLUSTER_ON h0 $P $T send 10.213.0.2 5002 30 & $CLUSTER_ON h2 $P $T send 10.213.0.2 5002 30; wait
  # h0 -> h1 and h0 -> h2 (h0 upload) at once
  $CLUSTER_ON h1 $P $T recv 5003 1 >$0.out1 & $CLUSTER_ON h2 $P $T recv 5003 1 >$0.out2 & sleep 0.3
  $CLUSTER_ON h0 $P $T send 10.213.0.2 5003 30 & $CLUSTER_ON h0 $P $T send 10.213.0.3 5003 30; wait
  echo "one $(grep stream $0.one)"
  echo "into $(grep stream $0.into | tr "\n" " ")"
  echo "outof $(cat $0.out1 $0.out2 | grep stream | tr "\n" " ")"
' "$work/r" 2>&1)
rc=$?
dir=$(sed -n 's/^dir //p' <<<"$out")
if [ $rc = 77 ]; then echo "$out"; exit 77; fi # (a skip from cluster.sh: nothing checked yet)
[ $rc = 0 ] && [ -n "$dir" ] || { bad "cluster run exited $rc"; echo "$out"; }
for i in 0 1 2; do grep -qx "name h$i h$i" <<<"$out" && ok || bad "host h$i's hostname: $(grep "^name h$i" <<<"$out")"; done
grep -qx "resolve 10.213.0.3" <<<"$out" && ok || bad "h0 does not resolve h2 to 10.213.0.3: $(grep resolve <<<"$out")"
grep -qx "shm h0 1 h1 0 root 0" <<<"$out" && ok || bad "/dev/shm is not private to each host: $(grep '^shm' <<<"$out")"
grep -qx "nics eth0 lo " <<<"$out" && ok || bad "a host's /sys/class/net: $(grep '^nics' <<<"$out")"
# rates against CLUSTER_RATE_BPS (125e6): TCP's payload is ~94% of a 1500-byte frame; below 60%
# the link is not what the benchmarks assume, above 102% it is not shaped (an unshaped veth moves
# GB/s)
agg() { awk '{ for (i = 1; i + 3 <= NF; i++) if ($i == "stream") { b += $(i+1); if (!t0 || $(i+2) < t0) t0 = $(i+2); if ($(i+3) > t1) t1 = $(i+3) } }
              END { if (t1 > t0) printf "%.0f", b / (t1 - t0); else print 0 }'; }
for what in one into outof; do
  r=$(grep "^$what " <<<"$out" | agg)
  echo "$what: $((r / 1000000)) MB/s (the link: 125 MB/s)"
  if [ "$r" -ge 75000000 ] && [ "$r" -le 127500000 ]; then ok; else bad "$what: $r B/s is not within 60-102% of 125e6"; fi
done
[ -z "$(left "$dir")" ] && ok || bad "left behind after a normal exit: $(left "$dir")"

# --- 2. the host boundary is real: an shm job split across hosts never meets ----------------------
# The same job on one host (1 x 2) runs; on two hosts (2 x 1) each rank waits alone and times out.
if [ -x "$TRAIN" ]; then
  out=$(SCHEDC_BACKEND=shm SCHEDC_JOB=cluster-$$ SCHEDC_TIMEOUT=1 "$C" -H 1 -S 2 -t 60 --ranks -- "$TRAIN" --steps 2 2>&1)
  [ $? = 0 ] && grep -q 'replicas agree: yes' <<<"$out" && grep -q 'weights digest' <<<"$out" && ok || { bad "an shm job on one cluster host"; echo "$out"; }
  out=$(SCHEDC_BACKEND=shm SCHEDC_JOB=cluster-$$ SCHEDC_TIMEOUT=1 "$C" -H 2 -S 1 -t 60 --ranks -- "$TRAIN" --steps 2 2>&1)
  if [ $? != 0 ] && ! grep -q 'weights digest' <<<"$out"; then ok; else bad "an shm job met across two cluster hosts"; echo "$out"; fi
else
  bad "no train_mlp at $TRAIN"
fi

# --- 3. the rank launcher: torchrun's variables, blocks and round-robin ---------------------------
# shellcheck disable=SC2034 # (read as ${!want})
want_slot="0 4 0 2 0 h0 10.213.0.1 29500|1 4 1 2 0 h0 10.213.0.1 29500|2 4 0 2 1 h1 10.213.0.1 29500|3 4 1 2 1 h1 10.213.0.1 29500"
# shellcheck disable=SC2034
want_node="0 4 0 2 0 h0 10.213.0.1 29500|1 4 0 2 1 h1 10.213.0.1 29500|2 4 1 2 0 h0 10.213.0.1 29500|3 4 1 2 1 h1 10.213.0.1 29500"
for map in slot node; do
  got=$("$C" -H 2 -S 2 -t 30 --ranks --map-by $map -- sh -c 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $GROUP_RANK $(hostname) $MASTER_ADDR $MASTER_PORT"' | sort -n | paste -sd'|')
  want=want_$map
  [ "$got" = "${!want}" ] && ok || bad "--ranks --map-by $map: got '$got', want '${!want}'"
done
got=$("$C" -H 3 -S 1 -t 30 --each -- sh -c 'echo "$CLUSTER_HOST_INDEX $CLUSTER_HOST $(hostname)"' | sort | paste -sd'|')
[ "$got" = "0 h0 h0|1 h1 h1|2 h2 h2" ] && ok || bad "--each: got '$got'"
out=$("$C" -H 2 -S 1 -t 30 --ranks -- sh -c '[ "$RANK" = 1 ] && exit 3; exit 0'; echo "rc $?")
[ "$out" = "rc 3" ] && ok || bad "--ranks: a rank's failure is not the exit status: $out"

# --- 4. two clusters at once never meet (the same addresses and port, each its own bytes) ---------
for k in 1 2; do
  "$C" -H 2 -S 1 -t 60 -- bash -c '
    '"$PY"' '"$RATE_PY"' >/dev/null 2>&1 || true
    $CLUSTER_ON h1 '"$PY"' '"$RATE_PY"' recv 5000 1 >'"$work/conc$k"' & sleep 0.5
    $CLUSTER_ON h0 '"$PY"' '"$RATE_PY"' send 10.213.0.2 5000 '"$((k * 3))"'; wait; echo "dir $CLUSTER_DIR"' >"$work/concdir$k" 2>&1 &
done
wait
for k in 1 2; do
  b=$(awk '/^stream/ { print $2 }' "$work/conc$k" 2>/dev/null)
  [ "$b" = $((k * 3 * 1048576)) ] && ok || bad "concurrent cluster $k: received '$b' bytes, want $((k * 3 * 1048576)) ($(cat "$work/concdir$k"))"
  d=$(sed -n 's/^dir //p' "$work/concdir$k")
  [ -n "$d" ] && [ -z "$(left "$d")" ] && ok || bad "concurrent cluster $k left: $(left "$d")"
done

# --- 5. --timeout: stopped, 124, nothing left ----------------------------------------------------
t0=$(date +%s.%N)
out=$("$C" -H 2 -S 1 -t 2 -- bash -c 'echo "dir $CLUSTER_DIR"; $CLUSTER_ON h0 sleep 60 & $CLUSTER_ON h1 sleep 60; wait' 2>&1); rc=$?
dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
d=$(sed -n 's/^dir //p' <<<"$out")
[ $rc = 124 ] && awk -v t="$dt" 'BEGIN { exit !(t < 12) }' && [ -z "$(left "$d")" ] && ok ||
  bad "--timeout 2: exit $rc after $dt s, left: $(left "$d")"

# --- 6. killed (SIGKILL: no trap runs): the holders die with it, the next run sweeps the rest -----
"$C" -H 2 -S 1 -- bash -c 'echo "dir $CLUSTER_DIR"; exec $CLUSTER_ON h0 sleep 117.77' >"$work/killed" 2>&1 &
cpid=$!
for _ in $(seq 100); do grep -q '^dir ' "$work/killed" && break; sleep 0.1; done
d=$(sed -n 's/^dir //p' "$work/killed")
sleep 0.3
kill -KILL $cpid; wait $cpid 2>/dev/null
sleep 0.3
holders=$(cat "$d"/h*.pid 2>/dev/null)
alive=""; for p in $holders; do [ -d /proc/$p ] && [ "$(cut -d' ' -f3 /proc/$p/stat)" != Z ] && alive="$alive $p"; done
[ -n "$d" ] && [ -n "$holders" ] && [ -z "$alive" ] && ok || bad "SIGKILLed run '$d': holders '$holders' still alive: '$alive'"
[ -n "$(left "$d")" ] && ok || bad "SIGKILLed run left nothing to sweep (the test is broken)"
"$C" --sweep 2>"$work/sweep"
[ -z "$(left "$d")" ] && ok || bad "--sweep left: $(left "$d")"
grep -q "dead run" "$work/sweep" && ok || bad "--sweep did not say what it removed: $(cat "$work/sweep")"
# the rank process inside (sleep 117.77 on h0) went with it
p=$(pgrep -x -f 'sleep 117.77'); [ -z "$p" ] && ok || { bad "the killed run's process on h0 survived the sweep"; kill $p; }

# --- 7. not root: 77, and a failure under SCHEDC_REQUIRE_TOOLS ------------------------------------
if command -v setpriv >/dev/null; then
  out=$(SCHEDC_REQUIRE_TOOLS="" setpriv --reuid 65534 --regid 65534 --clear-groups "$C" -H 2 -- true 2>&1); rc=$?
  [ $rc = 77 ] && grep -q 'SKIP.*not root' <<<"$out" && ok || bad "not root: exit $rc: $out"
  out=$(SCHEDC_REQUIRE_TOOLS=1 setpriv --reuid 65534 --regid 65534 --clear-groups "$C" -H 2 -- true 2>&1); rc=$?
  [ $rc = 1 ] && grep -q 'FAIL.*not root' <<<"$out" && ok || bad "not root under SCHEDC_REQUIRE_TOOLS=1: exit $rc: $out"
fi
out=$("$C" -H 0 -- true 2>&1); rc=$?
[ $rc = 2 ] && grep -q "'0' is not a host count" <<<"$out" && ok || bad "-H 0: exit $rc: $out"
out=$("$C" -r 1gb -- true 2>&1); rc=$?
[ $rc = 2 ] && grep -q "'1gb' is not a rate" <<<"$out" && ok || bad "-r 1gb: exit $rc: $out"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
