#!/usr/bin/env python3
"""tcp_rate.py — a TCP stream's rate across the test cluster's links (test_cluster.sh).

  tcp_rate.py recv PORT N         accept N streams; print "stream BYTES T0 T1" for each (its first
                                  and last byte's CLOCK_MONOTONIC, which every host shares)
  tcp_rate.py send ADDR PORT MB   send MB MiB to ADDR:PORT
The receiver times the stream, so the sender's socket buffer does not flatter it; streams of
several receivers combine by their times."""
import socket
import sys
import threading
import time


def recv(port, n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(n)
    print("listening", flush=True)
    out = []

    def one(c):
        total, t0 = 0, None
        while True:
            d = c.recv(1 << 20)
            if not d:
                break
            if t0 is None:
                t0 = time.monotonic()
            total += len(d)
        out.append((total, t0, time.monotonic()))

    th = []
    for _ in range(n):
        c, _ = s.accept()
        t = threading.Thread(target=one, args=(c,))
        t.start()
        th.append(t)
    for t in th:
        t.join()
    for total, t0, t1 in out:
        print("stream %d %.6f %.6f" % (total, t0, t1))


def send(addr, port, mb):
    for _ in range(100):  # the receiver may not listen yet
        try:
            s = socket.create_connection((addr, port), timeout=10)
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit("cannot connect to %s:%d" % (addr, port))
    b = b"\0" * (1 << 20)
    for _ in range(mb):
        s.sendall(b)
    s.close()


if __name__ == "__main__":
    if sys.argv[1] == "recv":
        recv(int(sys.argv[2]), int(sys.argv[3]))
    else:
        send(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
