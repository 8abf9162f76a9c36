#!/usr/bin/env python3
# torch_ddp.py — a small MLP trained with DistributedDataParallel, gradients reduced by gloo or by
# schedc (DDP hook, or canonical micro-batch accumulation), printing the weights' digest, to show
# which set-ups repeat the same bits across runs and across process counts (examples/README.md).
"""Usage (launches its own ranks on this host; Debian's torchrun crashes on Python 3.11):

    python3 examples/torch_ddp.py --nprocs 4 --reduce schedc --microbatches 8 --order canonical
    python3 examples/torch_ddp.py --nprocs 2 --reduce gloo --microbatches 8
    python3 examples/torch_ddp.py --nprocs 2 --backend schedc --reduce gloo --accumulate grad

Each step runs L = --microbatches micro-batches of --mb-size rows (fixed), L/N per rank.
--reduce gloo: DDP's own allreduce (.grad accumulation under no_sync). --reduce schedc
--accumulate grad: DDP with schedc.torch.allreduce_hook (plan: --order). --reduce schedc
--accumulate leaves (the default with --order canonical): schedc.torch.CanonicalGrads, the
same weights for N = 1, 2, 4, 8 processes; --order exact: exact leaves (CanonicalGrads(exact=True)),
the same weights for every N dividing L (L = 12: N = 1, 2, 3, 4, 6). Under an external launcher (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT set) leave out --nprocs. --backend schedc: the process group itself
is schedc's (`import schedc.torch; init_process_group("schedc")`): DDP's own bucket all-reduce
(--reduce gloo, no hook) then runs canonical plans; torch 2.x (DDP calls a Python process group
through a trampoline 1.13 lacks).
--compress q16|q8|topk|powersgd (DDP, --accumulate grad): a compression hook with error feedback on
the process group — schedc.torch's quantized_hook (16- or 8-bit integers on one grid) or topk_hook
(--topk-fraction, default 0.01), or torch's own powerSGD_hook (--powersgd-rank, default 4, from
step 10); docs/compression.md.
"""
import argparse
import os
import socket
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args, argv):
    """Start --nprocs copies of this script as ranks of one job; print rank 0's output."""
    port = free_port()
    child = [a for a in argv if not a.startswith("--nprocs")]
    if "--nprocs" in argv:  # "--nprocs N" as two words
        i = argv.index("--nprocs")
        child = argv[:i] + argv[i + 2:]
    procs = []
    for r in range(args.nprocs):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(args.nprocs), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + child, env=env,
                                      stdout=subprocess.DEVNULL if r else None, stderr=None, text=True))
    rc = 0
    for p in procs:
        try:
            p.wait(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        rc = rc or p.returncode
    return rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nprocs", type=int, default=0, help="launch this many ranks here (else: from RANK/WORLD_SIZE)")
    ap.add_argument("--backend", choices=["gloo", "schedc"], default="gloo",
                    help="the process group: gloo, or schedc's torch.distributed backend")
    ap.add_argument("--reduce", choices=["schedc", "gloo"], default="schedc",
                    help="gloo: DDP's own all-reduce (on --backend); schedc: the hook or CanonicalGrads")
    ap.add_argument("--order", choices=["canonical", "ring", "exact"], default="canonical",
                    help="schedc's plan order; exact: CanonicalGrads(exact=True), any N dividing --microbatches")
    ap.add_argument("--accumulate", choices=["grad", "leaves"], default=None,
                    help="per-rank micro-batches: .grad fold under DDP, or CanonicalGrads leaves "
                         "(default: leaves for schedc + canonical, else grad)")
    ap.add_argument("--microbatches", type=int, default=8, help="micro-batches per step, all ranks together")
    ap.add_argument("--mb-size", type=int, default=16, help="rows per micro-batch (keep it fixed)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compress", choices=["q16", "q8", "topk", "powersgd"], default=None,
                    help="a DDP compression hook with error feedback over the process group (docs/compression.md)")
    ap.add_argument("--topk-fraction", type=float, default=0.01)
    ap.add_argument("--powersgd-rank", type=int, default=4)
    args = ap.parse_args()
    if args.nprocs:
        return launch(args, sys.argv[1:])

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    sys.path.insert(0, os.path.join(HERE, "..", "python"))  # the checkout's package, if not installed
    import schedc
    import schedc.torch as st

    torch.set_num_threads(1)  # fewer threads, same kernels: the bits do not depend on it here
    dist.init_process_group(args.backend)  # "schedc": registered by `import schedc.torch`
    rank, n = dist.get_rank(), dist.get_world_size()
    L, B = args.microbatches, args.mb_size
    if L % n:
        sys.exit("torch_ddp: --microbatches %d must be a multiple of the %d processes" % (L, n))
    m = L // n
    acc = args.accumulate or ("leaves" if args.reduce == "schedc" and args.order in ("canonical", "exact") else "grad")
    if args.order == "exact" and (acc != "leaves" or args.reduce != "schedc"):
        sys.exit("torch_ddp: --order exact is CanonicalGrads(exact=True): --reduce schedc --accumulate leaves")
    if args.compress and (acc != "grad" or args.reduce != "gloo"):
        sys.exit("torch_ddp: --compress is a DDP hook on the process group: --reduce gloo --accumulate grad")

    # Data and model made deterministically here, identical on every rank.
    g = torch.Generator().manual_seed(1234 + args.seed)
    D = 32
    X = torch.randn(args.steps * L * B, D, generator=g)
    w_true = torch.randn(D, 1, generator=g)
    Y = torch.tanh(X @ w_true) + 0.1 * torch.randn(X.shape[0], 1, generator=g)
    Xe, Ye = X[:256], Y[:256]
    torch.manual_seed(args.seed)
    model = torch.nn.Sequential(torch.nn.Linear(D, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.MSELoss()

    comm = st.init_comm() if args.reduce == "schedc" else None
    if acc == "leaves":
        if args.reduce != "schedc":
            sys.exit("torch_ddp: --accumulate leaves needs --reduce schedc")
        grads = st.CanonicalGrads(model.parameters(), L, comm, op="avg", exact=(args.order == "exact"))
        net = model
    else:
        net = DDP(model, bucket_cap_mb=args.bucket_cap_mb)
        if args.reduce == "schedc":
            net.register_comm_hook(st.HookState(comm, order=args.order, op="avg"), st.allreduce_hook)
        elif args.compress in ("q16", "q8"):
            net.register_comm_hook(st.QuantizedState(bits=int(args.compress[1:])), st.quantized_hook)
        elif args.compress == "topk":
            net.register_comm_hook(st.TopKState(args.topk_fraction), st.topk_hook)
        elif args.compress == "powersgd":
            from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
            net.register_comm_hook(psgd.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                                      start_powerSGD_iter=10, use_error_feedback=True,
                                                      warm_start=True, random_seed=0), psgd.powerSGD_hook)

    for step in range(args.steps):
        for j in range(m):
            leaf = rank * m + j  # global micro-batch index: the same data whatever n is
            lo = (step * L + leaf) * B
            xb, yb = X[lo:lo + B], Y[lo:lo + B]
            if acc == "leaves":
                loss_fn(net(xb), yb).backward()
                grads.add(leaf)
            else:
                # Average over the rank's micro-batches here; DDP (or the hook) averages over ranks.
                if j < m - 1:
                    with net.no_sync():
                        (loss_fn(net(xb), yb) / m).backward()
                else:
                    (loss_fn(net(xb), yb) / m).backward()
        if acc == "leaves":
            grads.reduce()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if rank == 0:
            with torch.no_grad():
                print("step %d loss %.7f" % (step, loss_fn(model(Xe), Ye).item()), flush=True)

    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    d = schedc.digest(flat)
    all_d = [None] * n
    dist.all_gather_object(all_d, d)
    if rank == 0:
        print("ranks agree: %s" % ("yes" if len(set(all_d)) == 1 else "NO"))
        print("weights digest: %016x" % d, flush=True)
    if comm is not None:
        comm.close()
    dist.barrier()  # nobody tears down gloo (rank 0 hosts its store) while a peer still uses it
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
