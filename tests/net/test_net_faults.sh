#!/usr/bin/env bash
# test_net_faults.sh SCHEDC SCHEDULES — the net backend's failures are named, never hangs, and
# leave nothing behind. In namespaces of its own (network: the ports; IPC: UCX's System V
# segments; mount: a fresh /dev/shm; pid: its processes), so what is left is seen exactly:
#  - a rank killed mid-call (SCHEDC_INJECT=kill), on one host and across two pretend hosts: every
#    live rank fails with SCHEDC_EPEER naming rank 2, long before the timeout;
#  - a rank that stops answering (a 60 s stall): every live rank fails within the timeout (2 s)
#    naming rank 2 (SCHEDC_ETIMEOUT where it waited for it, the notice of that rank elsewhere);
#  - the bootstrap's bad inputs: one rank's MASTER_PORT wrong, a rank count that disagrees, rank 0
#    where MASTER_ADDR is not, a name that does not resolve, a port that is no number, a second
#    job on a port the first holds: a clear error on every rank, within the timeout;
#  - and then no listening socket, no process, no /dev/shm file, no System V segment; and (in the
#    ASan tree) no sanitizer report from any process, the failed ones included.
# Needs root for the namespaces (skip 77 otherwise).
set -u
S=$(realpath "$1"); D=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../skip.sh"
sc_need_net "$S" "$D"
if [ -z "${NET_FAULTS_INSIDE:-}" ]; then
  [ "$(id -u)" = 0 ] || sc_skip "not root: the namespaces that show what is left behind need root"
  unshare -n -i -m -p -f --mount-proc true 2>/dev/null || sc_skip "no network, IPC, mount or pid namespaces here"
  exec unshare -n -i -m -p -f --mount-proc env NET_FAULTS_INSIDE=1 bash -c \
    'mount -t tmpfs -o size=64m tmpfs /dev/shm && ip link set lo up && exec bash "$0" "$@"' "$0" "$@"
fi
pass=0; fail=0
# a pass also needs every process's exit clean: no sanitizer report (the ASan tree runs this too)
ok() { if grep -qE 'Sanitizer|runtime error:' <<<"$out"; then bad "a sanitizer report"; else pass=$((pass + 1)); fi; }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; echo "$out" | head -30; }
R="$S run $D/ring.lua --backend net"
port=29400
job() { # run the launch line "$@" with a fresh MASTER_PORT; out, rc, secs set
  port=$((port + 1))
  local t0=$(date +%s%N)
  out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port timeout 60 "$@" 2>&1); rc=$?
  secs=$(( ($(date +%s%N) - t0) / 1000000 ))
}
lines() { grep -c "$1" <<<"$out"; }
hostid() { echo "export SCHEDC_HOST_ID=h\$((SCHEDC_RANK / $1)); exec \"\$@\""; }

# --- a rank killed mid-call ------------------------------------------------------------------
job env SCHEDC_TIMEOUT=30 SCHEDC_INJECT=kill:2:1 "$S" launch -n 4 -- $R --count 100003
[ "$(lines '^rank [013]: error: .*rank 2 (pid [0-9]* on host [^ ]*) died')" = 3 ] && [ $secs -lt 15000 ] && ok ||
  bad "one host, rank 2 killed: want every live rank to name it (died), well within the 30 s timeout ($secs ms)"
job env SCHEDC_TIMEOUT=30 SCHEDC_INJECT=kill:2:1 "$S" launch -n 4 -- bash -c "$(hostid 2)" _ $R --count 100003
[ "$(lines '^rank [013]: error: .*rank 2 ')" = 3 ] && [ $secs -lt 15000 ] && ok ||
  bad "two pretend hosts, rank 2 killed: want every live rank to name it, well within the 30 s timeout ($secs ms)"

# --- a rank that stops answering -------------------------------------------------------------
job env SCHEDC_TIMEOUT=2 SCHEDC_INJECT=delay:2:60000000 "$S" launch -n 4 --grace 1 -- bash -c "$(hostid 2)" _ $R --count 1000
[ "$(lines '^rank [013]: error: .*timed out after 2 s on rank [0-9] (host [^)]*) in step [0-9]*: it waited for rank 2 ')" = 3 ] &&
  [ $secs -lt 12000 ] && ok || bad "rank 2 stalled: want every live rank to name it within the 2 s timeout ($secs ms)"

# --- the bootstrap's bad inputs ----------------------------------------------------------------
# rank 1 aims at another port: it finds nothing there; rank 0 names it missing, and tells rank 2
job env SCHEDC_TIMEOUT=2 "$S" launch -n 3 -- bash -c '[ "$SCHEDC_RANK" = 1 ] && MASTER_PORT=$((MASTER_PORT + 1)); exec "$@"' _ $R --count 10
[ "$(lines 'nothing listens at MASTER_ADDR:MASTER_PORT (127.0.0.1:[0-9]*): connection refused')" = 1 ] &&
  [ "$(lines 'rank 0 (host [^)]*) waited [0-9.]* s at MASTER_ADDR:MASTER_PORT (127.0.0.1:[0-9]*) for rank 1, which never connected')" = 2 ] &&
  [ $secs -lt 10000 ] && ok || bad "a wrong MASTER_PORT on rank 1"
# rank 2 says 4 ranks, the others 3: all three told, at once
job env SCHEDC_TIMEOUT=20 "$S" launch -n 3 -- bash -c '[ "$SCHEDC_RANK" = 2 ] && SCHEDC_NRANKS=4; exec "$@"' _ $R --count 10
[ "$(lines 'the ranks disagree on their count: rank 2 (host [^)]*) was started with 4 ranks, rank 0 (host [^)]*) with 3')" = 3 ] &&
  [ $secs -lt 10000 ] && ok || bad "a rank count that disagrees"
# MASTER_ADDR is not this host's: rank 0 says so at once; the others cannot reach it
out=$(MASTER_ADDR=10.254.254.254 MASTER_PORT=29399 SCHEDC_TIMEOUT=2 timeout 60 "$S" launch -n 2 -- $R --count 10 2>&1)
grep -q "this process is rank 0, on host [^,]*, but MASTER_ADDR:MASTER_PORT is '10.254.254.254', an address of another host" <<<"$out" &&
  grep -q "MASTER_ADDR:MASTER_PORT (10.254.254.254:[0-9]*) cannot be reached from host" <<<"$out" && ok ||
  bad "an unreachable MASTER_ADDR"
out=$(MASTER_ADDR=no-such-host.invalid MASTER_PORT=29399 SCHEDC_TIMEOUT=2 timeout 60 "$S" launch -n 2 -- $R --count 10 2>&1)
[ "$(grep -c "MASTER_ADDR:MASTER_PORT is 'no-such-host.invalid', which does not resolve" <<<"$out")" = 2 ] && ok ||
  bad "a MASTER_ADDR that does not resolve"
out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=http SCHEDC_TIMEOUT=2 timeout 60 "$S" launch -n 2 -- $R --count 10 2>&1)
[ "$(grep -c "the port of MASTER_ADDR:MASTER_PORT is 'http': a number from 1 to 65535" <<<"$out")" = 2 ] && ok ||
  bad "a MASTER_PORT that is no number"
# two jobs on one port: the first's rank 0 holds it (waiting for its rank 1); the second's rank 0
# finds it taken, its rank 1 reaches the first's bootstrap and is refused as another job's
port=$((port + 1))
MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SCHEDC_RANK=0 SCHEDC_NRANKS=2 SCHEDC_JOB=first SCHEDC_TIMEOUT=4 $R --count 10 >/dev/null 2>&1 &
first=$!
sleep 0.5
out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port SCHEDC_TIMEOUT=2 timeout 60 "$S" launch -n 2 -- $R --count 10 2>&1)
wait $first
grep -q "port $port of host [^ ]* (MASTER_ADDR:MASTER_PORT) is taken: another job's bootstrap" <<<"$out" &&
  grep -q "MASTER_ADDR:MASTER_PORT (127.0.0.1:$port) is the bootstrap of another job (its token differs): rank 1" <<<"$out" && ok ||
  bad "two jobs on one port"

# --- nothing left behind -----------------------------------------------------------------------
sleep 0.5
out="listening: $(ss -Hltn | wc -l); processes: $(ps -e --no-headers | grep -cv -e ' ps$' -e ' bash$' -e ' grep$' -e ' wc$'); /dev/shm: $(ls -A /dev/shm | wc -l); System V segments: $(ipcs -m | grep -c '^0x')"
[ "$out" = "listening: 0; processes: 0; /dev/shm: 0; System V segments: 0" ] && ok || { bad "left behind: $out"; ss -ltnp; ps -ef; ls -la /dev/shm; ipcs -m; }
echo "$pass passed, $fail failed"
[ $fail = 0 ]
