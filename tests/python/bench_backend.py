#!/usr/bin/env python3
# bench_backend.py — dist.all_reduce latency/bandwidth and a DDP step, the "schedc" backend against
# gloo in one run, and the Python cost per call (docs/performance.md, "torch backend"). Not a test.
# Usage: PYTHONPATH=python SCHEDC_LIBRARY=build/lib/libschedc.so python bench_backend.py [--nprocs 1 2 4]
#        [--max-mib 64] [--iters 20] [--tsv bench/results/torch_allreduce.tsv]
# --tsv: also write the all_reduce times and DDP steps in bench/results/'s format (bench/report.sh).
import argparse
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(backend, iters, max_mib):
    import torch
    import torch.distributed as dist
    import schedc.torch  # noqa: F401
    torch.set_num_threads(1)
    dist.init_process_group(backend)
    r, n = dist.get_rank(), dist.get_world_size()
    rows = []
    size = 4096
    while size <= max_mib << 20:
        t = torch.ones(size // 4)
        k = max(3, min(iters, int(iters * (1 << 20) / size)))
        for _ in range(2):
            dist.all_reduce(t)
        times = []
        for _ in range(k):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        times.sort()
        rows.append((size, times[len(times) // 2]))
        size *= 4
    # a DDP step: 4 layers of 512x512, batch 16
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.manual_seed(0)
    net = DDP(torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(4)]))
    x = torch.randn(16, 512)
    steps = []
    for i in range(8):
        dist.barrier()
        t0 = time.perf_counter()
        net(x).sum().backward()
        steps.append(time.perf_counter() - t0)
    steps = sorted(steps[2:])
    if r == 0:
        for size, s in rows:
            print("%s n=%d bytes=%d median_us=%.1f GBps=%.3f" % (backend, n, size, s * 1e6, size / s / 1e9))
        print("%s n=%d ddp_step_ms=%.2f" % (backend, n, steps[len(steps) // 2] * 1e3))
    if backend == "schedc" and n == 1:  # Python cost per call: the group's all_reduce vs the C call it makes
        pg = dist.distributed_c10d._get_default_group()
        t = torch.ones(1)
        for name, f in (("dist.all_reduce", lambda: dist.all_reduce(t)),
                        ("dist.all_reduce(async_op=True).wait()", lambda: dist.all_reduce(t, async_op=True).wait()),
                        ("comm.allreduce", lambda: pg.comm.allreduce(t, plan=pg._plan("allreduce")))):
            for _ in range(50):
                f()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(500):
                f()
            if r == 0:
                print("schedc n=1 %s 4B per_call_us=%.1f" % (name, (time.perf_counter() - t0) / 500 * 1e6))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--max-mib", type=int, default=64)
    ap.add_argument("--rank-of", default=None)
    ap.add_argument("--tsv", default=None)
    a = ap.parse_args()
    if a.rank_of:
        return rank_main(a.rank_of, a.iters, a.max_mib)
    out = []  # rank 0's lines of every job
    for n in a.nprocs:
        for backend in ("gloo", "schedc"):
            port = free_port()
            ps = [subprocess.Popen([sys.executable, __file__, "--rank-of", backend, "--iters", str(a.iters),
                                    "--max-mib", str(a.max_mib)], stdout=subprocess.PIPE if r == 0 else None, text=True,
                                   env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                                            MASTER_PORT=str(port), OMP_NUM_THREADS="1")) for r in range(n)]
            for line in ps[0].stdout:
                sys.stdout.write(line)
                out.append(line.split())
            for p in ps:
                p.wait()
    if a.tsv:
        write_tsv(a, out)


def write_tsv(a, lines):
    """bench/results/'s format: # date, machine, command lines, then ranks system size time_us busbw."""
    import datetime
    kv = [dict(w.split("=", 1) for w in l[1:] if "=" in w) | {"backend": l[0]} for l in lines if l]
    model = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    import torch
    with open(a.tsv, "w") as f:
        f.write("# torch_allreduce.tsv — dist.all_reduce, float32, CPU: the \"schedc\" backend beside gloo "
                "(tests/python/bench_backend.py)\n")
        f.write("# date: %s\n" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))
        f.write("# machine: %s, %d cores (load average %s); torch %s\n"
                % (model, os.cpu_count(), " ".join(open("/proc/loadavg").read().split()[:3]), torch.__version__))
        f.write("# command: tests/python/bench_backend.py --nprocs %s --max-mib %d --iters %d (median us per call)\n"
                % (" ".join(map(str, a.nprocs)), a.max_mib, a.iters))
        for n in a.nprocs:
            ddp = {d["backend"]: d["ddp_step_ms"] for d in kv if d.get("n") == str(n) and "ddp_step_ms" in d}
            if ddp:
                f.write("# ddp_step_ms: %d gloo %s schedc %s\n" % (n, ddp.get("gloo", "-"), ddp.get("schedc", "-")))
        f.write("# columns: ranks system size_bytes time_us busbw_gbps\n")
        for d in kv:
            if "median_us" in d:
                n, size, us = int(d["n"]), int(d["bytes"]), float(d["median_us"])
                f.write("%d %s %d %s %.6g\n" % (n, d["backend"], size, d["median_us"],
                                                size / (us * 1e3) * 2 * (n - 1) / n if n > 1 else 0))


if __name__ == "__main__":
    main()
