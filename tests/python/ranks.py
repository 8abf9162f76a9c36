# ranks.py — the binding tests' rank threads: fn(rank, comm) on one thread per rank of a set of
# communicators (schedc.Comm.threads), each joined within `timeout` seconds.
import threading


def run_ranks(comms, fn, timeout=60):
    """fn(rank, comm) on one thread per rank; returns results or raised exceptions by rank."""
    res = [None] * len(comms)

    def go(r):
        try:
            res[r] = fn(r, comms[r])
        except BaseException as e:  # noqa: B902 - reported to the test
            res[r] = e
    ts = [threading.Thread(target=go, args=(r,)) for r in range(len(comms))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
    return res
