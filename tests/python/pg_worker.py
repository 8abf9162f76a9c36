# pg_worker.py — one rank of a job on the "schedc" torch.distributed backend, for
# test_backend.py: `import schedc.torch` + init_process_group("schedc"), then a mode's work; it
# saves inputs and outputs so the test can evaluate the plans' trees independently.
# Usage: pg_worker.py MODE OUTDIR [args]; RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the env.
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import schedc
import schedc.torch  # noqa: F401 — registers "schedc"

mode, out = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
timeout = datetime.timedelta(seconds=float(os.environ.get("SCHEDC_TEST_TIMEOUT", "60")))
init = os.environ.get("SCHEDC_TEST_INIT", "env")
if init == "env":
    dist.init_process_group("schedc", timeout=timeout)
elif init == "tcp":  # init_method=
    dist.init_process_group("schedc", init_method="tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]),
                            rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]), timeout=timeout)
else:  # store=
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), int(os.environ["WORLD_SIZE"]),
                          int(os.environ["RANK"]) == 0, timeout=timeout)
    dist.init_process_group("schedc", store=store, rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]), timeout=timeout)
rank, n = dist.get_rank(), dist.get_world_size()
res = {"rank": rank, "n": n, "backend": str(dist.get_backend())}
R = dist.ReduceOp


def data(seed, k, dtype):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(k, generator=g, dtype=torch.float64) * 10 ** (torch.rand(k, generator=g, dtype=torch.float64) * 6 - 3)
    if dtype == torch.bool:
        return x > 0
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return (x * 1000).clamp(info.min, info.max).to(dtype)
    return x.to(dtype)


def run(name, x, fn):
    """res[name] = (input, output) of fn applied in place to a copy of x."""
    y = x.clone()
    fn(y)
    res[name] = (x, y)


if mode == "ops":
    k = 1001
    for dt in ("float32", "float64", "float16", "bfloat16", "int32", "int64"):
        run("sum_" + dt, data(100 + rank, k, getattr(torch, dt)), lambda t: dist.all_reduce(t))
    for op in ("AVG", "PRODUCT", "MIN", "MAX"):
        run(op, data(200 + rank, k, torch.float32), lambda t: dist.all_reduce(t, op=getattr(R, op)))
    run("AVG_bf16", data(250 + rank, k, torch.bfloat16), lambda t: dist.all_reduce(t, op=R.AVG))
    for dt in ("int8", "uint8", "int16", "bool"):
        for op in ("MIN", "MAX", "SUM"):
            run("%s_%s" % (op, dt), data(300 + rank, 37, getattr(torch, dt)),
                lambda t: dist.all_reduce(t, op=getattr(R, op)))
    run("reduce", data(400 + rank, k, torch.float32), lambda t: dist.reduce(t, dst=n - 1))
    x = data(500 + rank, n * 129, torch.float32)
    o = torch.empty(129)
    dist.reduce_scatter_tensor(o, x)
    res["rs_tensor"] = (x, o)
    o2 = torch.empty(129)
    dist.reduce_scatter(o2, list(x.clone().chunk(n)))
    res["rs_list"] = (x, o2)
    # coalesced: the same bits as one call per tensor (canonical plans: layout-free)
    ts = [data(600 + rank + i, 50 + 7 * i, torch.float32) for i in range(3)]
    cs = [t.clone() for t in ts]
    dist.all_reduce_coalesced(cs)
    res["coalesced"] = (ts, cs)
    x = data(700 + rank, 77, torch.float64)
    y = x.clone()
    dist.broadcast(y, src=n - 1)
    res["broadcast"] = (x, y)
    x = data(800 + rank, 33, torch.int64)
    o = torch.empty(33 * n, dtype=torch.int64)
    dist.all_gather_into_tensor(o, x)
    lst = [torch.empty(33, dtype=torch.int64) for _ in range(n)]
    dist.all_gather(lst, x)
    res["allgather"] = (x, o, torch.cat(lst))
    lst = [torch.empty(2, dtype=torch.complex64) for _ in range(n)]
    dist.all_gather(lst, torch.tensor([rank + 1j, -rank - 2j], dtype=torch.complex64))
    res["allgather_complex"] = torch.stack(lst)
    dist.barrier()
    # async: three ops issued before any wait, waited out of order; issue order on every rank
    a = [torch.full((10,), float(rank + i)) for i in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in a]
    fut = works[2].get_future()
    works[2].wait()
    res["async"] = ([w.is_completed() for w in works[:2]], [t.clone() for t in a], fut.wait()[0].clone())
    # arithmetic-free ops on the inner gloo group
    t = torch.arange(n, dtype=torch.float32) + 10 * rank
    o = torch.empty(n)
    dist.all_to_all_single(o, t)
    res["all_to_all"] = o
    if n > 1:
        if rank == 0:
            dist.send(torch.full((3,), 7.0), 1)
        elif rank == 1:
            z = torch.zeros(3)
            dist.recv(z, 0)
            res["recv"] = z
    # a subgroup: its own communicator
    sub = dist.new_group(list(range(0, n, 2)))
    if rank % 2 == 0:
        x = data(900 + rank, 65, torch.float32)
        y = x.clone()
        dist.all_reduce(y, group=sub)
        res["subgroup"] = (x, y)
    # another plan per group: pg_options (torch 2.x passes them to the creator) or set_order
    if int(torch.__version__.split(".")[0]) >= 2:
        ring = dist.new_group(list(range(n)), pg_options=schedc.torch.Options(order="ring"))
        t = torch.arange(10, dtype=torch.int64) * (rank + 1)
        dist.all_reduce(t, group=ring)
        res["ring"] = (ring.order, ring._plan("allreduce"), t)
    # exact mode per group (docs/python.md): Options(exact=True), $SCHEDC_TORCH_EXACT, set_exact
    def wide(seed, k, dtype):  # one element far above the rest: their low bits fall below the grid
        x = data(seed, k, dtype)
        x[k // 2] = {torch.float32: 2.0 ** 30, torch.bfloat16: 2.0 ** 60}.get(dtype, 2.0 ** 14)
        return x

    ex = dist.new_group(list(range(n)), pg_options=schedc.torch.Options(exact=True))
    for name, dt, op in (("f32", torch.float32, R.SUM), ("f16", torch.float16, R.SUM), ("bf16", torch.bfloat16, R.AVG)):
        run("exact_" + name, wide(1000 + rank, 333, dt), lambda t: dist.all_reduce(t, op=op, group=ex))
    x = wide(1100 + rank, n * 65, torch.float32)
    o = torch.empty(65)
    dist.reduce_scatter_tensor(o, x, group=ex)
    res["exact_rs"] = (x, o)
    run("exact_reduce", wide(1200 + rank, 99, torch.float32), lambda t: dist.reduce(t, dst=n - 1, group=ex))
    ts = [wide(1300 + rank + i, 40 + 9 * i, torch.float32) for i in range(2)]
    cs = [t.clone() for t in ts]
    dist.all_reduce_coalesced(cs, group=ex)
    res["exact_coalesced"] = (ts, cs)
    run("exact_i64", data(1400 + rank, 50, torch.int64), lambda t: dist.all_reduce(t, group=ex))  # ints: as ever
    os.environ["SCHEDC_TORCH_EXACT"] = "1"
    ex_env = dist.new_group(list(range(n)))
    del os.environ["SCHEDC_TORCH_EXACT"]
    run("exact_env", wide(1500 + rank, 77, torch.float32), lambda t: dist.all_reduce(t, group=ex_env))
    schedc.torch.set_exact(None, True)  # the default group, on every rank at this point
    run("exact_set", wide(1600 + rank, 77, torch.float32), lambda t: dist.all_reduce(t))
    schedc.torch.set_exact(None, False)
    res["exact_flags"] = (ex.exact, ex_env.exact, dist.distributed_c10d._get_default_group().exact)
    # unsupported: an error naming the op
    try:
        dist.all_reduce(torch.ones(2), op=R.BAND)
        res["band"] = "no error"
    except Exception as e:  # noqa: B902
        res["band"] = str(e)
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.complex64), op=R.MAX)  # torch's own check
        res["cmax"] = "no error"
    except Exception as e:  # noqa: B902
        res["cmax"] = type(e).__name__
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.uint8), op=R.AVG)
        res["u8avg"] = "no error"
    except Exception as e:  # noqa: B902
        res["u8avg"] = str(e)
elif mode == "train":  # DDP (no hook: its bucket all-reduces go through the backend), then FSDP2
    from torch.nn.parallel import DistributedDataParallel as DDP

    def ddp(cap):
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                  torch.nn.Linear(64, 3))
        net = DDP(net, bucket_cap_mb=cap)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for it in range(3):
            g = torch.Generator().manual_seed(1000 + it * n + rank)
            x, y = torch.randn(8, 32, generator=g), torch.randn(8, 3, generator=g)
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
            opt.zero_grad()
        return schedc.digest(torch.cat([p.detach().reshape(-1) for p in net.parameters()]))

    def fsdp():  # torch 2.x's fully_shard on CPU tensors
        from torch.distributed.fsdp import fully_shard
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 5))
        for m in net:
            if isinstance(m, torch.nn.Linear):
                fully_shard(m)
        fully_shard(net)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for it in range(3):
            g = torch.Generator().manual_seed(2000 + it * n + rank)
            x, y = torch.randn(4, 16, generator=g), torch.randn(4, 5, generator=g)
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
            opt.zero_grad()
        return schedc.digest(torch.cat([p.full_tensor().detach().reshape(-1) for p in net.parameters()]))

    # 1 MB buckets: a bucket per layer or two; 25 MB: one bucket; canonical plans: the same bits
    res["ddp"] = {cap: ddp(cap) for cap in (1, 25, 0.001)}
    if int(torch.__version__.split(".")[0]) >= 2:
        res["fsdp"] = [fsdp(), fsdp()]
elif mode == "dead":  # the last rank dies before the all_reduce: the others raise, naming it
    if rank == n - 1:
        os._exit(3)
    try:
        dist.all_reduce(torch.ones(1000))
        res["error"] = "no error"
    except Exception as e:  # noqa: B902
        res["error"] = str(e)
    torch.save(res, os.path.join(out, "rank%d.pt" % rank))
    os._exit(0)  # the store's host may be gone: no orderly teardown
elif mode == "late":  # the last rank never enters the barrier: the others time out, naming it
    if rank == n - 1:
        time.sleep(timeout.total_seconds() + 1.5)  # the others time out first, then it leaves
        os._exit(0)
    try:
        dist.barrier()
        res["error"] = "no error"
    except Exception as e:  # noqa: B902
        res["error"] = str(e)
    torch.save(res, os.path.join(out, "rank%d.pt" % rank))
    os._exit(0)
elif mode == "value":  # concurrent jobs and the launch loop: a small sum
    t = torch.full((1000,), float(sys.argv[3]) * (rank + 1))
    dist.all_reduce(t)
    res["value"] = t
torch.save(res, os.path.join(out, "rank%d.pt" % rank))
if os.environ.get("SCHEDC_TEST_DESTROY", "1") == "1":
    dist.destroy_process_group()
