# torch_hooks.py — one rank of the torch baselines of bench/compress/cluster.sh: PyTorch's own DDP
# communication hooks over gloo, timed per call as `schedc bench` times a collective: the plain
# allreduce (dist.all_reduce of f32), fp16_compress_hook and powerSGD_hook (rank 4, error feedback,
# warm start) on one bucket of N float32 elements (PowerSGD sees it as an (N/1024) x 1024 matrix,
# what a large linear layer's gradient is). A bucket stands in for DDP's GradBucket (the hooks call
# buffer(), index(), gradients(), is_last(), parameters() only). Each call: a barrier, the hook and
# its future waited for; the slowest rank's time. Env: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
# Usage: torch_hooks.py SIZES(bytes, comma-separated) ITERS WARMUP CONFIGS(gloo_f32,fp16,powersgd)
# Prints, on rank 0: size count config time_us p50_us p99_us max_us iters (time_us: the mean).
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook as psgd


class Bucket:
    def __init__(self, t, cols):
        self.t = t
        self.m = t.view(-1, cols)

    def buffer(self):
        return self.t

    def get_tensor(self):
        return self.t

    def index(self):
        return 0

    def is_last(self):
        return True

    def gradients(self):
        return [self.m]

    def get_per_parameter_tensors(self):
        return [self.m]

    def parameters(self):
        return [self.m]

    def set_buffer(self, b):
        self.t.copy_(b)


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")]
    iters, warmup = int(sys.argv[2]), int(sys.argv[3])
    configs = sys.argv[4].split(",")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    for size in sizes:
        n = size // 4
        cols = 1024 if n % 1024 == 0 else n
        for cfg in configs:
            g = torch.Generator().manual_seed(rank)
            t = torch.randn(n, generator=g)
            b = Bucket(t, cols)
            if cfg == "powersgd":  # compressed from the first timed call on (warm-up calls are the vanilla ones)
                st = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=4, start_powerSGD_iter=2,
                                        use_error_feedback=True, warm_start=True)
            times = []
            for it in range(warmup + iters):
                dist.barrier()
                t0 = time.perf_counter()
                if cfg == "gloo_f32":
                    dist.all_reduce(t)
                elif cfg == "fp16":
                    default_hooks.fp16_compress_hook(None, b).wait()
                else:
                    psgd.powerSGD_hook(st, b).wait()
                dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
                dist.all_reduce(dt, op=dist.ReduceOp.MAX)
                if it >= warmup:
                    times.append(float(dt) * 1e6)
            if rank == 0:
                s = sorted(times)
                p = lambda q: s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]
                print("%d %d %s %.1f %.1f %.1f %.1f %d" % (size, n, cfg, sum(s) / len(s), p(0.5), p(0.99), s[-1], len(s)),
                      flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
