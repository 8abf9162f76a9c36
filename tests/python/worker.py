# worker.py — one rank of a torch.distributed job for test_torch.py (launched by hand with
# RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, or by mpirun with SCHEDC_TEST_BACKEND=mpi): runs the DDP hook, CanonicalGrads or a plain
# allreduce and saves what the test needs to re-evaluate the trees independently.
import os
import sys
import threading

import torch
import torch.distributed as dist

import schedc
import schedc.torch as st

mode, out = sys.argv[1], sys.argv[2]
torch.set_num_threads(1)
if "OMPI_COMM_WORLD_RANK" in os.environ:  # started by mpirun: torch's ranks are MPI's (docs/python.md)
    os.environ.setdefault("RANK", os.environ["OMPI_COMM_WORLD_RANK"])
    os.environ.setdefault("WORLD_SIZE", os.environ["OMPI_COMM_WORLD_SIZE"])
dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
if os.environ.get("SCHEDC_TEST_HOSTS"):  # pretend hosts (test_cuda_emu.py): rank r on r * HOSTS // n
    os.environ["SCHEDC_HOST_ID"] = "pyhost%d" % (rank * int(os.environ["SCHEDC_TEST_HOSTS"]) // n)
# SCHEDC_TEST_GROUP=0,1: init_comm over dist.new_group of those ranks (test_torch.py's error cases)
group = dist.new_group([int(x) for x in os.environ["SCHEDC_TEST_GROUP"].split(",")]) \
    if os.environ.get("SCHEDC_TEST_GROUP") else None
comm = st.init_comm(group=group, timeout=60, backend=os.environ.get("SCHEDC_TEST_BACKEND") or None)
res = {"rank": rank, "n": n, "backend": comm.backend}
dev = None
if os.environ.get("SCHEDC_TEST_DEVICE") == "cuda":  # test_gpu.py: rank r on GPU r
    dev = torch.device("cuda", rank)
    torch.cuda.set_device(dev)


def model():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    return net.to(dev) if dev is not None else net


def batch(leaf):
    g = torch.Generator().manual_seed(100 + leaf)  # micro-batch `leaf`'s data, whoever runs it
    x, y = torch.randn(4, 8, generator=g), torch.randn(4, 3, generator=g)
    return (x.to(dev), y.to(dev)) if dev is not None else (x, y)


if mode == "train":  # the DDP hook, then CanonicalGrads over L leaves, in one job (start-up is costly)
    from torch.nn.parallel import DistributedDataParallel as DDP

    def train_ddp(state):
        """Two DDP iterations with the hook; the weights' digest."""
        net = DDP(model(), device_ids=[dev] if dev is not None else None,
                  bucket_cap_mb=0.0002)  # small buckets once DDP rebuilds them
        net.register_comm_hook(state, st.allreduce_hook)  # the hook as users register it
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for it in range(2):
            x, y = batch(rank + it * n)
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        state.close()
        return schedc.digest(torch.cat([p.detach().reshape(-1) for p in net.parameters()]).cpu())

    calls = []
    threads = set()

    class Recording:
        """The communicator, recording each bucket before and after the hook's allreduce."""
        nranks = comm.nranks

        def allreduce(self, t, op, plan):
            before = t.clone()
            comm.allreduce(t, op=op, plan=plan)
            calls.append((before.cpu(), t.to("cpu", copy=True)))  # on the stream the hook runs on
            threads.add(threading.current_thread().name)

    state = st.HookState(comm)  # overlap: the buckets reduced on a background thread
    state.comm = Recording()
    res["digest"] = train_ddp(state)
    res["calls"] = calls
    res["threads"] = sorted(threads)
    # the same training with each bucket reduced inside the hook: the same weights
    res["digest_inline"] = train_ddp(st.HookState(comm, overlap=False))

    L = int(sys.argv[3])
    net = model()
    cg = st.CanonicalGrads(net.parameters(), L, comm, op="avg")
    leaves = {}
    for leaf in cg.my_leaves:
        x, y = batch(leaf)
        torch.nn.functional.mse_loss(net(x), y).backward()
        leaves[leaf] = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).cpu()
        cg.add(leaf)
    cg.reduce()
    res["leaves"] = leaves
    res["grad"] = torch.cat([p.grad.reshape(-1) for p in net.parameters()]).cpu()
    # A size that differs across ranks: an exception on every rank, not a hang (it breaks the
    # communicator, so it comes last).
    try:
        comm.allreduce(torch.ones(10 + rank, dtype=torch.float32))
        res["mismatch"] = "no error"
    except schedc.Error as e:
        res["mismatch"] = e.status
elif mode == "device":  # device buffers through the cuda backend (tests/emu's device: host memory)
    import numpy as np

    class Dev:
        """A __cuda_array_interface__ view of a numpy array on CUDA device `dev` — what CuPy or Numba
        hand over. Only the emulated device (SCHEDC_CUDA_PLUGIN) may read host memory this way."""

        def __init__(self, a, dev):
            self.a = a
            self.device = type("Device", (), {"id": dev})()

        @property
        def __cuda_array_interface__(self):
            return {"data": (self.a.ctypes.data, False), "shape": self.a.shape, "typestr": self.a.dtype.str,
                    "strides": None, "version": 3, "stream": None}

    ring = schedc.Plan("ring", ranks=n)
    k = 1001
    rng = np.random.default_rng(100 + rank)
    x = rng.standard_normal(k) * 10 ** rng.uniform(-3, 3, k)
    ins, outs = {}, {}
    for dt in ("float32", "float64", "float16", "int32", "int64"):
        a = (x * 1000).astype(dt) if dt.startswith("int") else x.astype(dt)
        ins[dt] = a.copy()
        comm.allreduce(Dev(a, rank), plan=ring)
        comm.synchronize()  # stream-ordered: the result is there once the stream got there
        outs[dt] = a
    a = x.astype(np.float32)
    ins["avg"] = a.copy()
    comm.allreduce(Dev(a, rank), op="avg", plan=schedc.canonical_plan(n))
    rs_in = (x[:n * 40] * 7).astype(np.float32)
    rs_out = np.zeros(40, np.float32)
    comm.reduce_scatter(Dev(rs_in.copy(), rank), Dev(rs_out, rank), plan=schedc.canonical_plan(n, "reduce_scatter"))
    g = np.zeros(n * 40, np.int64)
    g[rank * 40:(rank + 1) * 40] = rank + 1
    comm.allgather(Dev(g, rank))
    b = np.full(33, float(rank), np.float64)
    comm.broadcast(Dev(b, rank), root=n - 1)
    comm.synchronize()
    outs["avg"], ins["rs"], outs["rs"], outs["allgather"], outs["broadcast"] = a, rs_in, rs_out, g, b
    res["ins"], res["outs"] = ins, outs
    res["host_after_device"] = comm.allreduce(np.full(5, rank + 1.0, np.float32)).tolist()  # host path beside it
    try:  # a size that differs across ranks: an error on every rank, not a hang
        comm.allreduce(Dev(np.ones(10 + rank, np.float32), rank))
        comm.synchronize()
        res["mismatch"] = "no error"
    except schedc.Error as e:
        res["mismatch"] = e.status
elif mode == "value":
    v = float(sys.argv[3])
    t = torch.full((1000,), v * (rank + 1), dtype=torch.float32)
    comm.allreduce(t)
    res["value"] = t
torch.save(res, os.path.join(out, "rank%d.pt" % rank))
comm.close()
dist.barrier()  # rank 0 hosts the store: nobody tears gloo down while a peer still uses it
dist.destroy_process_group()
