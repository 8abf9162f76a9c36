# hook_bits.py — a by-hand measurement (not a ctest test): which weights stay bit-identical when
# DDP runs PyTorch's own communication hooks (fp16/bf16 compression, PowerSGD) over a backend.
# Launches N ranks of a 32-64-64-3 MLP, STEPS SGD steps, and prints each rank's weights digest,
# for every (backend, bucket_cap_mb, ranks) asked for. Results: docs/python.md.
# Usage: hook_bits.py [--hook powersgd|fp16|bf16|q8|q16|topk|none] [--backends schedc,gloo] [--caps 25,0.001]
#        [--ranks 2,4] [--steps 6] [--psgd-rank 1]   (torch 2.x; PYTHONPATH=python, SCHEDC_LIBRARY as for the tests)
import argparse
import os
import socket
import subprocess
import sys


def rank_main(a):
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as psgd
    from torch.nn.parallel import DistributedDataParallel as DDP

    import schedc
    import schedc.torch  # noqa: F401 — registers "schedc"
    torch.set_num_threads(1)
    dist.init_process_group(a.backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64), torch.nn.Tanh(),
                              torch.nn.Linear(64, 3))
    ddp = DDP(net, bucket_cap_mb=a.cap)
    if a.hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif a.hook == "bf16":
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif a.hook == "powersgd":
        # rank-1 approximation from step 2 on (vanilla all-reduce before), error feedback, warm start
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=a.psgd_rank, start_powerSGD_iter=2,
                                   min_compression_rate=0.5, use_error_feedback=True, warm_start=True,
                                   random_seed=0)
        ddp.register_comm_hook(state, psgd.powerSGD_hook)
    elif a.hook in ("q8", "q16"):  # schedc's (docs/compression.md): the same bits over any group
        ddp.register_comm_hook(schedc.torch.QuantizedState(bits=int(a.hook[1:])), schedc.torch.quantized_hook)
    elif a.hook == "topk":
        ddp.register_comm_hook(schedc.torch.TopKState(0.05), schedc.torch.topk_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for it in range(a.steps):
        g = torch.Generator().manual_seed(1000 + it * n + rank)
        x, y = torch.randn(8, 32, generator=g), torch.randn(8, 3, generator=g)
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
        opt.zero_grad()
    w = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
    print("digest %016x" % schedc.digest(w), flush=True)
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook", default="powersgd")
    ap.add_argument("--backends", default="schedc,gloo")
    ap.add_argument("--caps", default="25,0.001")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--psgd-rank", type=int, default=1, help="PowerSGD's matrix_approximation_rank")
    ap.add_argument("--rank-main", action="store_true")
    ap.add_argument("--backend", default="schedc")
    ap.add_argument("--cap", type=float, default=25)
    a = ap.parse_args()
    if a.rank_main:
        return rank_main(a)
    for b in a.backends.split(","):
        for n in [int(x) for x in a.ranks.split(",")]:
            for cap in a.caps.split(","):
                port = free_port()
                ps = [subprocess.Popen([sys.executable, __file__, "--rank-main", "--backend", b, "--cap", cap,
                                        "--hook", a.hook, "--steps", str(a.steps), "--psgd-rank", str(a.psgd_rank)],
                                       env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                                                MASTER_PORT=str(port)),
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(n)]
                outs = [p.communicate(timeout=600)[0] for p in ps]
                ds = []
                for r, (p, o) in enumerate(zip(ps, outs)):
                    d = [ln.split()[1] for ln in o.splitlines() if ln.startswith("digest ")]
                    if p.returncode != 0 or not d:
                        print("%s n=%d cap=%s rank %d failed (exit %s):\n%s" % (b, n, cap, r, p.returncode, o[-2000:]))
                        d = ["FAILED"]
                    ds.append(d[0])
                print("hook=%s backend=%s ranks=%d bucket_cap_mb=%s: %s%s" % (
                    a.hook, b, n, cap, " ".join(ds), "" if len(set(ds)) == 1 else "  (ranks differ)"), flush=True)


if __name__ == "__main__":
    main()
