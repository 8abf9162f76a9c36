#!/usr/bin/env bash
# cluster.sh — a test cluster of H hosts on this machine (tests/cluster/README.md): each host a
# network namespace with its own hostname (UTS namespace), its own /dev/shm and /etc/hosts (mount
# namespace) and one link `eth0` to a bridge, shaped with `tc tbf` both ways at RATE. Runs a
# command, then always tears everything down (names unique per run; a trap; dead runs swept).
#
#   cluster.sh [-H HOSTS] [-S SLOTS] [-r RATE] [-q QUEUE] [-t SECONDS] [--each | --ranks [--map-by node]] [--] CMD...
#   cluster.sh --sweep            remove what runs whose owner died left behind
#
# Exit status: CMD's (124 after --timeout); 77 where the cluster cannot be made (not root; no
# netns, veth, bridge or tbf), 1 instead under SCHEDC_REQUIRE_TOOLS; 2 for bad arguments.
set -u
set -o pipefail

BASE=${CLUSTER_BASE:-/run/schedc-cluster}
PREFIX=scc # every namespace of every run: scc-<pid>-<token>-<host|br>

usage() {
  cat <<'EOF'
usage: cluster.sh [-H HOSTS] [-S SLOTS] [-r RATE] [-q QUEUE] [-t SECONDS] [--each | --ranks [--map-by node]] [--] CMD [ARGS...]
       cluster.sh --sweep

Make HOSTS hosts (default 2) of SLOTS slots (default 2), named h0, h1, ..., each link shaped to
RATE (a tc rate: 1gbit, 500mbit, ...; default 1gbit), run CMD, tear down. CMD runs:
  (default)  once, in this namespace, with CLUSTER_* set (CLUSTER_ON HOST CMD runs on a host)
  --each     on every host at once (CLUSTER_HOST, CLUSTER_HOST_INDEX set)
  --ranks    SLOTS times per host with torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK,
             LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR=h0's address, MASTER_PORT=29500);
             ranks in blocks per host, or round-robin with --map-by node
-q QUEUE    each shaped link's queue, as tbf's latency (default 50ms)
-t SECONDS  stop CMD (SIGTERM, then SIGKILL 5 s later) and exit 124 after SECONDS.
EOF
}

# --- skips --------------------------------------------------------------------------------------
cannot() { # WHY: the cluster cannot be made here
  if [ -n "${SCHEDC_REQUIRE_TOOLS:-}" ] && [ "${SCHEDC_REQUIRE_TOOLS}" != 0 ]; then
    echo "FAIL: cluster: $* (SCHEDC_REQUIRE_TOOLS=$SCHEDC_REQUIRE_TOOLS requires the test cluster)" >&2
    exit 1
  fi
  echo "[SKIP] cluster: $*"
  exit 77
}

# --- teardown of one run's state folder ---------------------------------------------------------
# Kill every process in the run's namespaces (the hosts' holders too, which frees their mount
# namespaces: the private /dev/shm goes with them), then delete the namespaces and the folder.
teardown_dir() {
  local d=$1 ns pids i
  [ -d "$d" ] || return 0
  for i in 1 2 3 4 5 6 7 8 9 10; do
    pids=""
    while read -r ns; do
      [ -n "$ns" ] && pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"
    done <"$d/netns" 2>/dev/null
    [ -z "${pids// /}" ] && break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
    sleep 0.1
  done
  while read -r ns; do
    [ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
  done <"$d/netns" 2>/dev/null
  rm -rf "$d"
}

alive() { # PID STARTTIME: that process still runs (not another one given its id, nor a zombie)
  local f
  f=$(cut -d' ' -f3,22 "/proc/$1/stat" 2>/dev/null) || return 1 # (no spaces in bash's comm)
  [ "$f" != "Z $2" ] && [ "${f#* }" = "$2" ]
}

# Runs whose owner is gone (killed with SIGKILL: no trap ran). A sweeper claims a dead run by
# renaming its folder, so two sweepers never tear down one run twice; namespaces of this prefix
# without a folder (killed between creating them and writing the list) by the pid in their name.
sweep() {
  local d owner pid st ns
  [ -d "$BASE" ] || return 0
  for d in "$BASE"/*; do
    [ -d "$d" ] || continue
    case $d in *.sweep.*) ;; *)
      read -r pid st <"$d/owner" 2>/dev/null || { [ "$(stat -c %Y "$d")" -lt $(($(date +%s) - 60)) ] || continue; pid=0; st=0; }
      alive "$pid" "$st" && continue
      mv "$d" "$d.sweep.$$" 2>/dev/null || continue
      d="$d.sweep.$$" ;;
    esac
    # (a .sweep. folder whose sweeper died: take it over)
    owner=${d##*.sweep.}
    [ "$owner" != "$$" ] && [ -d "/proc/$owner" ] && [ "$(cut -d' ' -f3 "/proc/$owner/stat" 2>/dev/null)" != Z ] && continue
    echo "cluster: removing the leftovers of a dead run: $d" >&2
    teardown_dir "$d"
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$PREFIX-[0-9]*-"); do
    pid=$(cut -d- -f2 <<<"$ns")
    [ -d "/proc/$pid" ] && [ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" != Z ] && continue
    [ -d "$BASE/$(cut -d- -f2,3 <<<"$ns")" ] && continue # its run's folder is swept above
    echo "cluster: removing namespace $ns of a dead run" >&2
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
    ip netns del "$ns" 2>/dev/null
  done
}

# --- arguments ----------------------------------------------------------------------------------
H=2 S=2 RATE=1gbit QUEUE=50ms TMO=0 MODE=cmd MAP=slot
bad() { echo "cluster.sh: $*" >&2; exit 2; }
isint() { [[ $1 =~ ^[1-9][0-9]{0,2}$ ]]; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    --sweep) [ "$(id -u)" = 0 ] || cannot "not root"; sweep; exit 0 ;;
    -H|--hosts) [ $# -ge 2 ] || bad "$1 needs a value"; isint "$2" && [ "$2" -le 200 ] || bad "$1: '$2' is not a host count from 1 to 200"; H=$2; shift 2 ;;
    -S|--slots) [ $# -ge 2 ] || bad "$1 needs a value"; isint "$2" && [ "$2" -le 256 ] || bad "$1: '$2' is not a slot count from 1 to 256"; S=$2; shift 2 ;;
    -r|--rate) [ $# -ge 2 ] || bad "$1 needs a value"; [[ $2 =~ ^[0-9]+(\.[0-9]+)?[kmg]?bit$ ]] || bad "$1: '$2' is not a rate like 1gbit, 500mbit or 100kbit"; RATE=$2; shift 2 ;;
    -q|--queue) [ $# -ge 2 ] || bad "$1 needs a value"; [[ $2 =~ ^[1-9][0-9]{0,3}ms$ ]] || bad "$1: '$2' is not a queue length like 50ms (1ms to 9999ms)"; QUEUE=$2; shift 2 ;;
    -t|--timeout) [ $# -ge 2 ] || bad "$1 needs a value"; [[ $2 =~ ^[1-9][0-9]{0,5}$ ]] || bad "$1: '$2' is not a whole number of seconds from 1 to 999999"; TMO=$2; shift 2 ;;
    --each) MODE=each; shift ;;
    --ranks) MODE=ranks; shift ;;
    --map-by) [ $# -ge 2 ] || bad "$1 needs a value"; case $2 in slot|node) MAP=$2 ;; *) bad "--map-by: '$2' is not slot or node" ;; esac; shift 2 ;;
    --) shift; break ;;
    -*) bad "unknown option '$1' (cluster.sh --help)" ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || bad "no command (cluster.sh --help)"
[ "$MAP" = slot ] || [ "$MODE" = ranks ] || bad "--map-by is for --ranks"

# rate in bytes per second, for the tests' and benchmarks' bounds
case $RATE in
  *gbit) RATE_BPS=$(awk -v r="${RATE%gbit}" 'BEGIN { printf "%.0f", r * 1e9 / 8 }') ;;
  *mbit) RATE_BPS=$(awk -v r="${RATE%mbit}" 'BEGIN { printf "%.0f", r * 1e6 / 8 }') ;;
  *kbit) RATE_BPS=$(awk -v r="${RATE%kbit}" 'BEGIN { printf "%.0f", r * 1e3 / 8 }') ;;
  *) RATE_BPS=$(awk -v r="${RATE%bit}" 'BEGIN { printf "%.0f", r / 8 }') ;;
esac
[ "$RATE_BPS" -ge 1000 ] || bad "--rate: '$RATE' is below 8kbit"

# --- what it needs ------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || cannot "not root (network namespaces need CAP_NET_ADMIN and CAP_SYS_ADMIN)"
for t in ip tc nsenter unshare setpriv mount; do
  command -v "$t" >/dev/null || cannot "no '$t' on PATH (Debian: iproute2, util-linux, mount)"
done

sweep

# --- make it ------------------------------------------------------------------------------------
TOKEN=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
RUN=$$-$TOKEN
DIR=$BASE/$RUN
NS=$PREFIX-$RUN
BR=$NS-br
CMDPID=
cleanup() {
  trap - EXIT INT TERM HUP
  [ -n "$CMDPID" ] && kill -TERM "$CMDPID" 2>/dev/null
  teardown_dir "$DIR"
}
trap 'cleanup' EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap 'cleanup; exit 129' HUP

mkdir -p "$BASE" && mkdir -m 0700 "$DIR" || cannot "cannot make $DIR"
echo "$$ $(cut -d' ' -f22 /proc/$$/stat)" >"$DIR/owner"
: >"$DIR/netns"
mkdir "$DIR/tmp"

addr() { echo "10.213.0.$(($1 + 1))"; } # a private range, only inside this run's namespaces
HOSTS="" ADDRS="" HOSTLIST=""
{
  echo "127.0.0.1 localhost"
  echo "::1 localhost ip6-localhost ip6-loopback"
  for ((i = 0; i < H; i++)); do
    echo "$(addr "$i") h$i"
    HOSTS="$HOSTS h$i"; ADDRS="$ADDRS $(addr "$i")"; HOSTLIST="$HOSTLIST,h$i:$S"
  done
} >"$DIR/hosts"
HOSTS=${HOSTS# } ADDRS=${ADDRS# } HOSTLIST=${HOSTLIST#,}
for ((i = 0; i < H; i++)); do echo "h$i slots=$S"; done >"$DIR/hostfile"

# on HOST CMD...: run CMD on a host, in the current folder (the path exists there: the hosts'
# mount namespaces are copies of this one, but /dev/shm and /etc/hosts are the host's own)
cat >"$DIR/on" <<EOF
#!/bin/sh
# on HOST CMD [ARGS...] — run CMD on host HOST of the test cluster $RUN (tests/cluster/cluster.sh)
d=$DIR
[ \$# -ge 2 ] || { echo "usage: \$0 HOST CMD [ARGS...] (hosts: $HOSTS)" >&2; exit 2; }
h=\$1; shift
pid=\$(cat "\$d/\$h.pid" 2>/dev/null) || { echo "cluster: no host '\$h' (hosts: $HOSTS)" >&2; exit 127; }
# the holder must still be that host's (not a reused pid): in its network namespace, whose
# inode was recorded when it was made (from another host, /run/netns shows only older ones)
[ "\$(stat -Lc %i "/proc/\$pid/ns/net" 2>/dev/null)" = "\$(cat "\$d/\$h.net" 2>/dev/null)" ] ||
  { echo "cluster: host '\$h' is gone" >&2; exit 127; }
exec nsenter -t "\$pid" -n -u -m --wd="\$PWD" -- "\$@"
EOF
# rsh HOST WORDS...: as ssh runs a command line on a host (the words joined by spaces, read by
# the host's shell): Open MPI's plm_rsh_agent and `schedc launch --rsh`
cat >"$DIR/rsh" <<EOF
#!/bin/sh
# rsh HOST WORDS... — like ssh HOST WORDS... on the test cluster $RUN
h=\$1; shift
exec "$DIR/on" "\$h" /bin/sh -c "\$*"
EOF
chmod 0755 "$DIR/on" "$DIR/rsh"

# tbf: burst of 1 ms at the rate (at least 2 full frames), a queue of QUEUE (50 ms: 6.25 MB at
# 1 Gbit/s, a switch port's buffer; at 5 ms, 4 ranks' TCP streams into one port lost packets and
# Open MPI's calls stalled on retransmission timeouts)
BURST=$((RATE_BPS / 1000)); [ $BURST -lt 3100 ] && BURST=3100
shape() { # NETNS DEV
  ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$RATE" burst "$BURST" latency "$QUEUE" 2>&1
}
setup() {
  local out i ns
  echo "$BR" >>"$DIR/netns"
  ip netns add "$BR" || return 1
  ip -n "$BR" link add br0 type bridge || { echo "no bridge support"; return 1; }
  ip -n "$BR" link set br0 up && ip -n "$BR" link set lo up || return 1
  for ((i = 0; i < H; i++)); do
    ns=$NS-h$i
    echo "$ns" >>"$DIR/netns"
    ip netns add "$ns" || return 1
    ip -n "$BR" link add "p$i" type veth peer name eth0 netns "$ns" || { echo "no veth support"; return 1; }
    ip -n "$BR" link set "p$i" master br0 || return 1
    ip -n "$BR" link set "p$i" up || return 1
    ip netns exec "$ns" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6' 2>/dev/null # IPv4 only
    ip -n "$ns" addr add "$(addr "$i")/24" dev eth0 || return 1
    ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up || return 1
    # the host's upload (its eth0) and download (its bridge port)
    out=$(shape "$ns" eth0) || { echo "tc tbf: $out"; return 1; }
    out=$(shape "$BR" "p$i") || { echo "tc tbf: $out"; return 1; }
    stat -Lc %i "/run/netns/$ns" >"$DIR/h$i.net" || return 1
  done
  # The holders, once every namespace exists: a host's mount namespace is a copy of this one at
  # its making, and later mounts (a later host's /run/netns entry) do not reach it
  for ((i = 0; i < H; i++)); do
    ns=$NS-h$i
    # the holder: keeps the host's UTS and mount namespaces (killed with this script: pdeathsig)
    setpriv --pdeathsig KILL -- ip netns exec "$ns" unshare --uts --mount --propagation private -- /bin/sh -c '
      echo "$1" >/proc/sys/kernel/hostname &&
      mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm &&
      mount --bind "$2/hosts" /etc/hosts &&
      exec sleep infinity' holder "h$i" "$DIR" </dev/null >/dev/null 2>"$DIR/h$i.err" &
    echo $! >"$DIR/h$i.pid"
    disown $! # (its end at the teardown is no news)
  done
  # ready when every holder shows its hostname
  local t
  for ((i = 0; i < H; i++)); do
    for ((t = 0; t < 200; t++)); do
      [ "$(nsenter -t "$(cat "$DIR/h$i.pid")" -u hostname 2>/dev/null)" = "h$i" ] && [ -n "$(nsenter -t "$(cat "$DIR/h$i.pid")" -m findmnt -n /etc/hosts 2>/dev/null)" ] && break
      kill -0 "$(cat "$DIR/h$i.pid")" 2>/dev/null || { echo "host h$i did not start: $(cat "$DIR/h$i.err")"; return 1; }
      sleep 0.05
    done
    [ $t -lt 200 ] || { echo "host h$i did not start within 10 s"; return 1; }
  done
}
# (not in a subshell: the holders die with their parent)
if ! setup >"$DIR/setup.log" 2>&1; then
  why=$(tr '\n' ' ' <"$DIR/setup.log")
  cleanup
  cannot "cannot make the cluster: $why"
fi

export CLUSTER_DIR=$DIR CLUSTER_HOSTS=$HOSTS CLUSTER_ADDRS=$ADDRS CLUSTER_SLOTS=$S CLUSTER_NHOSTS=$H
export CLUSTER_RATE=$RATE CLUSTER_RATE_BPS=$RATE_BPS CLUSTER_IF=eth0 CLUSTER_HOSTLIST=$HOSTLIST
export CLUSTER_ON=$DIR/on CLUSTER_RSH=$DIR/rsh CLUSTER_HOSTFILE=$DIR/hostfile
# Open MPI across the hosts, started on h0: its launch agent is rsh; TCP between hosts on eth0,
# shared memory within one; its session folders under the run's (hosts share /tmp); the TCP
# transport's progress thread (waiting in epoll: with more runnable processes than cores, a rank
# that only polled took 26 ms for a 4 KiB allreduce between two hosts at load 22, 7.6 ms with it)
export CLUSTER_MPIRUN="mpirun --allow-run-as-root --oversubscribe --hostfile $DIR/hostfile --mca plm_rsh_agent $DIR/rsh --mca btl tcp,self,vader --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --mca btl_tcp_progress_thread 1 --mca orte_tmpdir_base $DIR/tmp"

# --- run the command ----------------------------------------------------------------------------
run_all() { # every host's (or rank's) process at once; the first failure is the status
  local pids=() i l r status=0 p
  if [ "$MODE" = each ]; then
    for ((i = 0; i < H; i++)); do
      CLUSTER_HOST=h$i CLUSTER_HOST_INDEX=$i "$DIR/on" "h$i" "$@" &
      pids+=($!)
    done
  else
    local ws=$((H * S)) a0=${ADDRS%% *}
    for ((r = 0; r < ws; r++)); do
      if [ "$MAP" = node ]; then i=$((r % H)) l=$((r / H)); else i=$((r / S)) l=$((r % S)); fi
      RANK=$r WORLD_SIZE=$ws LOCAL_RANK=$l LOCAL_WORLD_SIZE=$S GROUP_RANK=$i GROUP_WORLD_SIZE=$H \
        MASTER_ADDR=$a0 MASTER_PORT=29500 CLUSTER_HOST=h$i CLUSTER_HOST_INDEX=$i "$DIR/on" "h$i" "$@" &
      pids+=($!)
    done
  fi
  for p in "${pids[@]}"; do
    wait "$p"; r=$?
    [ $status = 0 ] && status=$r
  done
  return $status
}
if [ "$MODE" = cmd ] && [ -t 0 ] && [ "$TMO" = 0 ]; then
  "$@" # a shell by hand: in the foreground, with the terminal
  status=$?
else
  if [ "$MODE" = cmd ]; then "$@" & else run_all "$@" & fi
  CMDPID=$!
  if [ "$TMO" != 0 ]; then
    (for ((t = 0; t < TMO * 10; t++)); do sleep 0.1; kill -0 "$CMDPID" 2>/dev/null || exit 0; done
     echo "cluster: the command ran past $TMO s; stopping it" >&2; touch "$DIR/timedout"
     kill -TERM "$CMDPID" 2>/dev/null
     for ns in $(cat "$DIR/netns"); do ip netns pids "$ns" | xargs -r kill -TERM 2>/dev/null; done
     sleep 5; kill -KILL "$CMDPID" 2>/dev/null) </dev/null &
    WATCH=$!
  fi
  wait "$CMDPID"
  status=$?
  CMDPID=
  [ -f "$DIR/timedout" ] && status=124
  [ "$TMO" != 0 ] && { kill "$WATCH" 2>/dev/null; wait "$WATCH" 2>/dev/null; }
fi
exit $status
