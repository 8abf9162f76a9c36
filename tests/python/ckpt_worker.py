# ckpt_worker.py — a rank of test_recover.py's jobs (RANK, WORLD_SIZE, MASTER_* set by the test).
#   ckpt_worker.py fsdp save DIR OUT           FSDP2 (fully_shard on CPU, gloo) trains 2 steps with Adam,
#                                              checkpoints into DIR/sharded (every rank its shard) and
#                                              DIR/rank0 (whole), and rank 0 writes OUT: every parameter
#                                              and Adam state tensor, whole
#   ckpt_worker.py fsdp load DIR OUT           the same model, at this world size, loads each of them;
#                                              rank 0 writes OUT: the whole state after each load
#   ckpt_worker.py shrink JOB N DIE OUT        a Comm.shm job trains 6 steps with CanonicalGrads(exact)
#                                              over 12 leaves; rank DIE SIGKILLs itself before step 3; the
#                                              survivors shrink, agree on the step, go on; the lowest
#                                              survivor writes OUT: the weights and the member list
import os
import signal
import sys

import torch


def whole_state(net, opt):
    """Every parameter and optimizer state tensor, whole (DTensors gathered), by name."""
    out = {}
    for k, v in net.state_dict().items():
        out["p." + k] = (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone()
    names = dict(enumerate(k for k, _ in net.named_parameters()))
    for i, st in opt.state_dict()["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim():
                out["o.%s.%s" % (names[i], k)] = (v.full_tensor() if hasattr(v, "full_tensor") else v).detach().clone()
    return out


def fsdp(action, d, out):
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    from schedc import checkpoint
    dist.init_process_group("gloo")
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(16, 33), torch.nn.Tanh(), torch.nn.Linear(33, 5))  # 33: uneven shards
    for m in net:
        if isinstance(m, torch.nn.Linear):
            fully_shard(m)
    fully_shard(net)
    opt = torch.optim.Adam(net.parameters(), lr=0.01)
    if action == "save":
        for it in range(2):
            g = torch.Generator().manual_seed(100 + it * n + rank)
            x, y = torch.randn(4, 16, generator=g), torch.randn(4, 5, generator=g)
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
            opt.zero_grad()
        for kind in ("sharded", "rank0"):
            checkpoint.save(os.path.join(d, kind), 2, {"model": net, "optimizer": opt, "data": {"next": 2}},
                            sharded=kind == "sharded")
        state = {"saved": whole_state(net, opt)}
    else:
        state = {}
        for kind in ("sharded", "rank0"):
            got = checkpoint.load(os.path.join(d, kind), {"model": net, "optimizer": opt})
            assert got is not None and got["data"] == {"next": 2}, got
            state[kind] = whole_state(net, opt)
    if rank == 0:
        torch.save(state, out)
    dist.barrier()
    dist.destroy_process_group()


def shrink(job, n, die, out):
    import schedc
    import schedc.torch as st
    rank = int(os.environ["RANK"])
    comm = schedc.Comm.shm(rank, n, job=job, timeout=30)
    torch.manual_seed(7)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    snaps = {}
    step, steps, shrunk = 0, 6, 0
    while step < steps:
        if step == 3 and rank == die and not shrunk:
            os.kill(os.getpid(), signal.SIGKILL)
        # the state at the start of the step: a rank may finish a step another rank's call failed in
        snaps[step] = ({k: v.clone() for k, v in net.state_dict().items()},
                       {"state": {k: {n_: t.clone() for n_, t in s.items()} for k, s in opt.state_dict()["state"].items()},
                        "param_groups": opt.state_dict()["param_groups"]})
        snaps.pop(step - 2, None)
        try:
            grads = st.CanonicalGrads(net.parameters(), 12, comm, op="avg", exact=True)
            for leaf in grads.my_leaves:
                g = torch.Generator().manual_seed(step * 100 + leaf)
                x, y = torch.randn(4, 8, generator=g), torch.randn(4, 1, generator=g)
                torch.nn.functional.mse_loss(net(x), y, reduction="sum").backward()
                grads.add(leaf)
            grads.reduce()
            grads.close()
        except schedc.Error as e:
            if e.status not in ("SCHEDC_EPEER", "SCHEDC_ETIMEOUT") or shrunk:
                raise
            new = comm.shrink()
            comm.close()
            comm, shrunk = new, shrunk + 1
            lo = torch.tensor([step], dtype=torch.int64)
            comm.allreduce(lo, op="min")  # the earliest step a survivor has not finished
            step = int(lo)
            net.load_state_dict(snaps[step][0])
            opt.load_state_dict(snaps[step][1])
            opt.zero_grad(set_to_none=True)
            continue
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
    if comm.rank == 0:
        flat = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        torch.save({"weights": schedc.digest(flat), "members": [comm.parent_rank(r) for r in range(comm.nranks)]}, out)
    comm.close()


if __name__ == "__main__":
    if sys.argv[1] == "fsdp":
        fsdp(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        shrink(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
