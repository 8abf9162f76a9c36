# compress_worker.py — one rank of a compression job for test_compress.py (docs/compression.md).
# Usage: compress_worker.py MODE OUTDIR; RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the env.
#   gloo      on gloo: the hooks' torch path against the C library (a schedc Comm) call for call,
#             DDP with quantized_hook (q8, q16) and topk_hook, a state_dict round trip
#   backend   (torch 2.x) on the schedc backend: an Options(wire="q8") group, DDP with
#             quantized_hook through the backend, sparse COO all_reduce
#   gloo_ddp  the backend mode's DDP run over gloo (the torch path): the same weights expected
#   ckpt      on gloo: DDP with quantized_hook (q8, error feedback) for 6 steps straight, and
#             checkpointed at step 3 (schedc.checkpoint.save, whole and sharded) then resumed into a
#             fresh model, optimizer and hook state; and resumed with fresh (zero) residuals
import datetime
import os
import sys

import torch
import torch.distributed as dist

import schedc
import schedc.torch as st
from schedc.compress import _quantized_torch

mode, out = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
timeout = datetime.timedelta(seconds=120)
dist.init_process_group("schedc" if mode == "backend" else "gloo", timeout=timeout)
rank, n = dist.get_rank(), dist.get_world_size()
res = {"rank": rank}


def data(seed, k, dt):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(k, generator=g, dtype=torch.float64) * 2.0 ** torch.randint(-6, 3, (k,), generator=g)).to(dt)


def bits(t):
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


def ddp_weights(state, hook, steps=4):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)  # several buckets
    ddp.register_comm_hook(state, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(8, 16, generator=g)
        loss = (ddp(x) - x[:, :1]).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


if mode == "gloo":
    comm = st.init_comm()
    mismatch, compared = [], 0
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        for op in ("sum", "avg"):
            for bits_ in (8, 16):
                rc, rt = torch.zeros(257, dtype=dt), torch.zeros(257, dtype=dt)
                for step in range(2):
                    x = data(1000 * step + 10 * rank + bits_, 257, dt)
                    a, b = x.clone(), x.clone()
                    comm.allreduce(a, op=op, wire="q%d" % bits_, residual=rc)
                    _quantized_torch(b, bits_, rt, op, dist.group.WORLD)
                    compared += 1
                    if not (torch.equal(bits(a), bits(b)) and torch.equal(bits(rc), bits(rt))):
                        mismatch.append((str(dt), op, bits_, step))
    res["mismatch"], res["compared"] = mismatch, compared
    res["ddp_q8"] = ddp_weights(st.QuantizedState(bits=8), st.quantized_hook)
    res["ddp_q16"] = ddp_weights(st.QuantizedState(bits=16), st.quantized_hook)
    s = st.TopKState(0.1)
    res["ddp_topk"] = ddp_weights(s, st.topk_hook)
    s2 = st.TopKState(0.1)
    s2.load_state_dict(s.state_dict())
    d1, d2 = s.state_dict()["residuals"], s2.state_dict()["residuals"]
    res["state_ok"] = (s2.calls == s.calls > 0 and sorted(d2) == sorted(d1) and len(d1) == 4 and
                       all(torch.equal(d2[k], d1[k]) for k in d1))
    comm.close()
elif mode == "backend":
    pg = dist.new_group(list(range(n)), pg_options=st.Options(wire="q8"), backend="schedc")
    x = data(7 + rank, 500, torch.float32)
    a, b = x.clone(), x.clone()
    dist.all_reduce(a, op=dist.ReduceOp.AVG, group=pg)
    dist.group.WORLD.comm.allreduce(b, op="avg", wire="q8")
    res["wire_ok"] = torch.equal(a, b)
    res["ddp_q8"] = ddp_weights(st.QuantizedState(bits=8), st.quantized_hook)
    # sparse COO: rank r holds rows 0..r of a (n+2) x 3 matrix, duplicates included
    def sparse_of(r):
        i = torch.tensor([list(range(r + 1)) + [0]])
        v = torch.arange(3 * (r + 2), dtype=torch.float32).reshape(r + 2, 3) / 7
        return torch.sparse_coo_tensor(i, v, (n + 2, 3))
    t = sparse_of(rank)
    dist.all_reduce(t)
    want = sparse_of(0).coalesce()
    for r in range(1, n):
        want = (want + sparse_of(r).coalesce()).coalesce()
    res["sparse"] = t
    res["sparse_ok"] = t.is_sparse and torch.equal(t.coalesce().to_dense(), want.to_dense())
elif mode == "ckpt":
    import schedc.checkpoint as ck

    def trainer():
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
        ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=0.001)  # several buckets
        state = st.QuantizedState(bits=8)
        ddp.register_comm_hook(state, st.quantized_hook)
        return model, ddp, torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9), state

    def steps(ddp, opt, a, b):
        for s in range(a, b):  # the data of step s on this rank, whatever ran before
            x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1000 * s + rank))
            loss = (ddp(x) - x[:, :1]).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

    def weights(model):
        return torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    model, ddp, opt, state = trainer()
    steps(ddp, opt, 0, 6)
    res["straight"] = weights(model)
    for kind in ("whole", "sharded"):
        d = os.path.join(out, kind)
        model, ddp, opt, state = trainer()
        steps(ddp, opt, 0, 3)
        ck.save(d, 3, {"model": model, "opt": opt, "comm": state}, sharded=kind == "sharded")
        res["residual_" + kind] = state.state_dict()["residuals"]
        model, ddp, opt, state = trainer()
        ck.load(d, {"model": model, "opt": opt, "comm": state})
        res["loaded_" + kind] = state.state_dict()["residuals"]
        steps(ddp, opt, 3, 6)
        res["resumed_" + kind] = weights(model)
    model, ddp, opt, state = trainer()  # the residuals left out: other weights
    ck.load(os.path.join(out, "whole"), {"model": model, "opt": opt})
    steps(ddp, opt, 3, 6)
    res["resumed_zero_residuals"] = weights(model)
elif mode == "gloo_ddp":
    res["ddp_q8"] = ddp_weights(st.QuantizedState(bits=8), st.quantized_hook)
dist.barrier()
torch.save(res, os.path.join(out, "rank%d.pt" % rank))
dist.destroy_process_group()
