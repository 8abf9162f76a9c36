# bench_checkpoint.py — by hand, not a test: schedc.checkpoint's write and load (verify included) beside
# torch.save / torch.load of the same state, in one run, alternating, in GB/s (1e9 bytes/s).
#   python bench_checkpoint.py [MB] [REPS] [DIR]      (default 256 MB, 5 rounds, a temporary folder)
# torch.save does not fsync: its figures are given as it is and with an fsync of the file and the folder
# added (what schedc.checkpoint.save does), so that both are durable when timed.
import os
import statistics
import sys
import tempfile
import time

import torch

from schedc import checkpoint as ck


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    d = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="bench_ck")
    torch.manual_seed(0)
    n = 16
    state = {"t%d" % i: torch.randn(mb * (1 << 20) // 4 // n) for i in range(n)}
    nbytes = sum(t.numel() * 4 for t in state.values())
    res = {k: [] for k in ("schedc save", "torch.save", "torch.save+fsync", "schedc load", "schedc verify",
                           "torch.load")}
    tp = os.path.join(d, "torch.pt")
    for r in range(reps):
        for sub in os.listdir(d):
            os.unlink(os.path.join(d, sub))
        t0 = time.perf_counter()
        ck.save(d, r, {"w": state}, keep=1, rng=False)
        res["schedc save"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        torch.save(state, tp)
        res["torch.save"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        torch.save(state, tp)
        fd = os.open(tp, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        fd = os.open(d, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        res["torch.save+fsync"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        got = ck.load(d, {"w": None}, rng=False)
        res["schedc load"].append(time.perf_counter() - t0)
        assert all(torch.equal(got["w"][k], v) for k, v in state.items())
        t0 = time.perf_counter()
        ck.read_container(ck.checkpoints(d)[0][1])
        res["schedc verify"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        back = torch.load(tp)
        res["torch.load"].append(time.perf_counter() - t0)
        assert all(torch.equal(back[k], v) for k, v in state.items())
    print("%d MB of float32 tensors (%d tensors), %d rounds, %s (load average %.1f)" % (
        nbytes >> 20, n, reps, d, os.getloadavg()[0]))
    for k, v in res.items():
        g = [nbytes / t / 1e9 for t in v]
        print("  %-17s mean %.2f GB/s  (%.3f s)  min %.2f  max %.2f GB/s" % (k, nbytes / statistics.mean(v) / 1e9,
                                                                         statistics.mean(v), min(g), max(g)))


if __name__ == "__main__":
    main()
