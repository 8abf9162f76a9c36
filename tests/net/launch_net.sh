#!/usr/bin/env bash
# launch_net.sh SCHEDC N CMD [ARGS...] — N ranks of CMD on this host with `schedc launch`, a free
# MASTER_PORT on 127.0.0.1 for the net backend's bootstrap (chosen by the kernel, then released:
# tests that run side by side do not meet).
S=$1; N=$2; shift 2
MASTER_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') || exit 1
export MASTER_ADDR=127.0.0.1 MASTER_PORT
exec "$S" launch -n "$N" -- "$@"
