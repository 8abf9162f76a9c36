#!/usr/bin/env bash
# test_cluster_launch.sh SCHEDC — `schedc launch --hosts` on the test cluster's hosts, reached
# through the cluster's rsh (as through ssh) and through a --host-cmd prefix: every rank runs on
# its host (its hostname, its /dev/shm) with torchrun's multi-node variables; a rank's failure
# names its host; SIGINT reaches the ranks on the hosts as SIGTERM; kill -9 of launch leaves no
# rank running on any host.
set -u
S=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
[ -n "${CLUSTER_DIR:-}" ] || exec "$here/cluster.sh" -H 3 -S 2 -r 1gbit -t 120 -- bash "$0" "$@"

pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
cd "$w" || exit 1

# every rank: where it is, what it was told, and that /dev/shm is its host's
rank_line='touch /dev/shm/launch-test-$RANK; echo "$RANK $(hostname) $LOCAL_RANK/$LOCAL_WORLD_SIZE $GROUP_RANK/$GROUP_WORLD_SIZE $MASTER_ADDR $(ls /dev/shm | grep -c launch-test-) ${PWD##*/}" >"r$RANK"'
# shellcheck disable=SC2016
out=$("$S" launch --hosts "$CLUSTER_HOSTLIST" --rsh "$CLUSTER_RSH" -- sh -c "$rank_line; sleep 0.5" 2>&1) || bad "launch --rsh: $out"
got=$(cat r0 r1 r2 r3 r4 r5 2>/dev/null | paste -sd'|')
d=${w##*/}
want="0 h0 0/2 0/3 h0 [12] $d\|1 h0 1/2 0/3 h0 [12] $d\|2 h1 0/2 1/3 h0 [12] $d\|3 h1 1/2 1/3 h0 [12] $d\|4 h2 0/2 2/3 h0 [12] $d\|5 h2 1/2 2/3 h0 [12] $d"
grep -qxE "$want" <<<"$got" && ok || bad "launch --hosts $CLUSTER_HOSTLIST --rsh: got '$got', want '$want'"
# (the count of launch-test-* in a host's /dev/shm is 1 or 2: its own ranks' only, never 3-6)
rm -f r*

"$S" launch --hosts "$CLUSTER_HOSTLIST" -n 4 --map-by node --host-cmd "$CLUSTER_ON %h" -- sh -c "$rank_line" >/dev/null 2>&1 ||
  bad "launch --host-cmd"
got=$(cat r0 r1 r2 r3 2>/dev/null | cut -d' ' -f1-4 | paste -sd'|')
want="0 h0 0/2 0/3|1 h1 0/1 1/3|2 h2 0/1 2/3|3 h0 1/2 0/3"
[ "$got" = "$want" ] && ok || bad "launch --map-by node --host-cmd: got '$got', want '$want'"

out=$("$S" launch --hosts h0,h1,h2 --rsh "$CLUSTER_RSH" --grace 0.5 -- sh -c '[ "$(hostname)" = h2 ] && exit 5; exec sleep 30' 2>&1); rc=$?
[ $rc = 5 ] && grep -q 'rank 2 (on h2) exited with status 5' <<<"$out" && ok || bad "a failing rank on h2: exit $rc: $out"

# SIGINT: the ranks on every host get SIGTERM at once and exit 0 here; launch exits 130
"$S" launch --hosts h0,h1,h2 --rsh "$CLUSTER_RSH" -- sh -c 'trap "touch term.$RANK; kill \$!; exit 0" TERM; touch up.$RANK; sleep 30 & wait' &
lp=$!
for _ in $(seq 100); do [ -e up.0 ] && [ -e up.1 ] && [ -e up.2 ] && break; sleep 0.1; done
kill -INT $lp; wait $lp; rc=$?
[ $rc = 130 ] && [ -e term.0 ] && [ -e term.1 ] && [ -e term.2 ] && ok || bad "SIGINT to launch: exit $rc, $(ls)"

# kill -9 of launch: its ranks on the hosts die with it (pdeathsig through on, nsenter, sh, exec)
for how in "--rsh $CLUSTER_RSH" "--host-cmd $CLUSTER_ON %h"; do
  rm -f up.*
  # shellcheck disable=SC2086
  "$S" launch --hosts h1,h2 ${how%% *} "${how#* }" -- sh -c 'touch up.$RANK; exec sleep 97.25' &
  lp=$!
  for _ in $(seq 100); do [ -e up.0 ] && [ -e up.1 ] && break; sleep 0.1; done
  sleep 0.2
  kill -KILL $lp; wait $lp 2>/dev/null
  sleep 0.5
  left=$(for h in h1 h2; do ip netns pids "$(basename "$CLUSTER_DIR" | sed 's/^/scc-/')-$h"; done | while read -r p; do
    [ "$(cat /proc/$p/cmdline 2>/dev/null | tr '\0' ' ')" = "sleep 97.25 " ] && echo "$p"; done)
  [ -z "$left" ] && ok || { bad "kill -9 of launch ${how%% *}: ranks left on the hosts: $left"; kill $left 2>/dev/null; }
done

echo "$pass passed, $fail failed"
[ $fail = 0 ]
