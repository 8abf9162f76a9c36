#!/usr/bin/env python3
# bench_fsdp.py — an FSDP2 (`fully_shard`) training step and a DTensor tensor-parallel step on the
# "schedc" backend beside gloo, in one run (issue 40; docs/performance.md). Not a test.
# For each rank count, a gloo job then a schedc job; each rank times every step after warm-up;
# rank 0 prints mean, p99 and max (ms). --profile: where schedc's time goes, per step on rank 0:
# the ops issued (by kind), the caller's time inside the backend's methods (Python per call), the
# executor's time preparing and copying tensors, the time inside the C calls, and the caller's wait.
# Usage: PYTHONPATH=python SCHEDC_LIBRARY=build/lib/libschedc.so ~/.cache/schedc/venv-torch2/bin/python \
#        bench/bench_fsdp.py [--nprocs 2 4] [--steps 40] [--dim 512] [--layers 6] [--profile]
#        [--also LABEL=PYTHONPATH ...]  (another schedc package, e.g. an older checkout's python/, in the same run)
import argparse
import collections
import json
import os
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Profile:
    """Per-step tallies of the schedc backend (rank 0), by wrapping its methods (timer overhead
    included: compare with and without --profile)."""

    def __init__(self):
        self.t = collections.Counter()
        self.ops = collections.Counter()

    def install(self, pg_cls, comm_cls, prepared_cls, work_cls):
        import time as _t
        prof = self

        def wrap_issue(name):
            f = getattr(pg_cls, name)

            def w(self, *a, **k):
                t0 = _t.perf_counter()
                try:
                    return f(self, *a, **k)
                finally:
                    prof.t["issue"] += _t.perf_counter() - t0
                    prof.ops[name] += 1
            setattr(pg_cls, name, w)
        for name in ("allreduce", "allreduce_coalesced", "reduce_scatter", "_reduce_scatter_base",
                     "reduce_scatter_tensor_coalesced", "broadcast", "allgather", "_allgather_base",
                     "allgather_into_tensor_coalesced", "barrier"):
            wrap_issue(name)
        pg_cls.reduce_scatter_single = pg_cls._reduce_scatter_base
        pg_cls.all_gather_single = pg_cls._allgather_base
        pg_cls.reduce_scatter_single_coalesced = pg_cls.reduce_scatter_tensor_coalesced
        pg_cls.all_gather_single_coalesced = pg_cls.allgather_into_tensor_coalesced

        def wrap_timed(cls, name, key):
            f = getattr(cls, name)

            def w(*a, **k):
                t0 = _t.perf_counter()
                try:
                    return f(*a, **k)
                finally:
                    prof.t[key] += _t.perf_counter() - t0
            setattr(cls, name, w)
        for name in ("allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"):
            wrap_timed(comm_cls, name, "C call")
        wrap_timed(prepared_cls, "__init__", "prepare copies")
        wrap_timed(prepared_cls, "finish", "prepare copies")
        wrap_timed(work_cls, "wait", "wait")

    def take(self):
        d = dict(self.t)
        d["ops"] = dict(self.ops)
        self.t.clear()
        self.ops.clear()
        return d


def rank_main(backend, what, steps, dim, layers, profile):
    import torch
    import torch.distributed as dist
    import schedc.torch  # noqa: F401 — registers "schedc"
    from schedc import Comm
    from schedc import _backend
    torch.set_num_threads(1)
    dist.init_process_group(backend)
    r, n = dist.get_rank(), dist.get_world_size()
    prof = None
    if profile and backend == "schedc" and r == 0:
        prof = Profile()
        prof.install(_backend.ProcessGroupSchedc, Comm, _backend._Prepared, _backend._Work)
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(100 + r)
    if what == "fsdp":
        from torch.distributed.fsdp import fully_shard
        mods = []
        for _ in range(layers):
            mods += [torch.nn.Linear(dim, dim), torch.nn.Tanh()]
        net = torch.nn.Sequential(*mods)
        for m in net:
            if isinstance(m, torch.nn.Linear):
                fully_shard(m)
        fully_shard(net)
        batch = 16
    else:  # DTensor tensor parallel: pairs of column- then row-parallel Linears (Megatron's MLP)
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
        mesh = init_device_mesh("cpu", (n,))
        mods = []
        for _ in range(layers // 2 * 2):
            mods += [torch.nn.Linear(dim, dim)]
        net = torch.nn.Sequential(*mods)
        plan = {}
        for i in range(0, len(mods), 2):
            plan[str(i)] = ColwiseParallel()
            plan[str(i + 1)] = RowwiseParallel()
        net = parallelize_module(net, mesh, plan)
        batch = 16
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(batch, dim, generator=g)
    times, profs = [], []
    for it in range(steps + 3):
        dist.barrier()
        if prof:
            prof.take()
        t0 = time.perf_counter()
        loss = net(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        dt = time.perf_counter() - t0
        if it >= 3:
            times.append(dt)
            if prof:
                profs.append(prof.take())
    out = torch.tensor(times, dtype=torch.float64)
    allt = [torch.zeros_like(out) for _ in range(n)]
    dist.all_gather(allt, out)
    if r == 0:
        t = torch.stack(allt).max(0).values * 1e3  # a step ends on its slowest rank
        res = {"steps_ms": t.tolist()}
        if profs:
            keys = set(k for p in profs for k in p if k != "ops")
            res["profile_ms_per_step"] = {k: 1e3 * sum(p.get(k, 0.0) for p in profs) / len(profs) for k in keys}
            res["ops_per_step"] = {k: v / len(profs) for k, v in
                                   collections.Counter(k2 for p in profs for k2, c in p["ops"].items()
                                                       for _ in range(c)).items()}
        print("RESULT " + json.dumps(res), flush=True)
    dist.destroy_process_group()


def launch(n, backend, what, args, pythonpath=None):
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1")
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        procs.append(subprocess.Popen([sys.executable, __file__, "--rank-main", backend, what, str(args.steps),
                                       str(args.dim), str(args.layers), str(int(args.profile))],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=1200)[0] for p in procs]
    for p, o in zip(procs, outs):
        if p.returncode:
            sys.exit("rank failed (%s %s %d):\n%s" % (backend, what, n, o[-3000:]))
    line = [ln for ln in outs[0].splitlines() if ln.startswith("RESULT ")][0]
    return json.loads(line[7:])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rank-main":
        a = sys.argv[2:]
        rank_main(a[0], a[1], int(a[2]), int(a[3]), int(a[4]), bool(int(a[5])))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, nargs="+", default=[2, 4])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--what", nargs="+", default=["fsdp", "tp"])
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--also", nargs="*", default=[], help="LABEL=PYTHONPATH: another schedc package in the same run")
    ap.add_argument("--rounds", type=int, default=1, help="every job this many times, interleaved (a loaded machine)")
    args = ap.parse_args()
    runs = [("gloo", "gloo", None), ("schedc", "schedc", None)] + \
        [("schedc " + a.split("=", 1)[0], "schedc", a.split("=", 1)[1]) for a in args.also]
    print("| workload | ranks | backend | mean ms | median | p99 | max | round means |")
    print("|---|---|---|---|---|---|---|---|")
    profiles = []
    for what in args.what:
        for n in args.nprocs:
            steps = {label: [] for label, _, _ in runs}
            means = {label: [] for label, _, _ in runs}
            for _ in range(args.rounds):
                for label, backend, pypath in runs:
                    res = launch(n, backend, what, args, pypath)
                    steps[label] += res["steps_ms"]
                    means[label].append(sum(res["steps_ms"]) / len(res["steps_ms"]))
                    if "profile_ms_per_step" in res:
                        profiles.append((what, n, label, res))
            for label, _, _ in runs:
                t = sorted(steps[label])
                print("| %s | %d | %s | %.2f | %.2f | %.2f | %.2f | %s |" % (
                    what, n, label, sum(t) / len(t), t[len(t) // 2], t[min(len(t) - 1, int(0.99 * len(t)))], t[-1],
                    " ".join("%.1f" % m for m in means[label])), flush=True)
    for what, n, label, res in profiles:
        p = res["profile_ms_per_step"]
        print("\n%s %s, %d ranks, rank 0, ms per step: %s; ops per step: %s" % (
            label, what, n, ", ".join("%s %.2f" % (k, v) for k, v in sorted(p.items())),
            ", ".join("%s %.1f" % kv for kv in sorted(res["ops_per_step"].items()))))


if __name__ == "__main__":
    main()
