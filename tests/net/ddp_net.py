# ddp_net.py OUT — one rank of a small DDP job on the "schedc" torch.distributed backend (torchrun's
# or hand-set RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT): three SGD steps with 1 MB buckets; writes
# the weights' digest and the communicator's backend to OUT.rank<r> (test_net_cluster.sh compares
# a job across two hosts, over net, with the same job on one host, over shm).
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import schedc
import schedc.torch  # noqa: F401 — registers "schedc"

torch.set_num_threads(1)
dist.init_process_group("schedc")
rank, n = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.Tanh(), torch.nn.Linear(256, 256), torch.nn.Tanh(),
                          torch.nn.Linear(256, 3))
ddp = DDP(net, bucket_cap_mb=0.1)  # several buckets
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
for it in range(3):
    g = torch.Generator().manual_seed(1000 + it * n + rank)
    x, y = torch.randn(8, 32, generator=g), torch.randn(8, 3, generator=g)
    torch.nn.functional.mse_loss(ddp(x), y).backward()
    opt.step()
    opt.zero_grad()
pg = dist.distributed_c10d._get_default_group()
backend = getattr(pg, "comm", None) or pg._get_backend(torch.device("cpu")).comm
with open("%s.rank%d" % (sys.argv[1], rank), "w") as f:
    f.write("%d %s %016x\n" % (rank, backend.backend,
                               schedc.digest(torch.cat([p.detach().reshape(-1) for p in net.parameters()]))))
dist.destroy_process_group()
