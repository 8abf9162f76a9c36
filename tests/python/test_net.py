# test_net.py — the net backend (UCX) from Python: Comm.net bootstrapped by a function of the
# caller's (the bits against trees.py's evaluation; an allgather that raises), and the "schedc"
# process group across pretend hosts (SCHEDC_HOST_ID: the library and the binding see two hosts,
# no MPI launcher) bootstrapping net through its store, DDP giving one host's weights.
# (init_comm's net: test_torch.py.)
import os
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

import schedc
from trees import reduce_by_plan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def _built():
    try:
        schedc.uid_net()  # (its listener stays with this process: harmless in a test)
        return True
    except schedc.Error as e:
        if e.status != "SCHEDC_EUNAVAIL":
            raise
        return False


if not _built():
    if os.environ.get("SCHEDC_REQUIRE_TOOLS", "0") not in ("", "0"):
        pytest.fail("the library has no net backend (libucx-dev) and SCHEDC_REQUIRE_TOOLS requires it",
                    pytrace=False)
    pytest.skip("the library has no net backend (libucx-dev)", allow_module_level=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def threads_allgather(n):
    """An in-process allgather for n threads (each its own rank): the bootstrap's out-of-band
    exchange without a store."""
    barrier = threading.Barrier(n)
    box = [None] * n

    def make(rank):
        def allgather(mine):
            box[rank] = mine
            barrier.wait(timeout=30)
            got = list(box)
            barrier.wait(timeout=30)
            return got
        return allgather
    return make


def run_threads(rank, n):
    """rank(r) for r in range(n), each in a thread of its own; joined (60 s each)."""
    th = [threading.Thread(target=rank, args=(r,)) for r in range(n)]
    for t in th:
        t.start()
    for t in th:
        t.join(60)


def test_comm_net_allgather_bits():
    """Three ranks in threads of this process, bootstrapped by a Python function: an allreduce
    gives every rank the ring's trees over the inputs, evaluated here."""
    n, k = 3, 1031
    make = threads_allgather(n)
    rng = np.random.default_rng(7)
    ins = [(rng.standard_normal(k) * 10 ** rng.uniform(-3, 3, k)).astype(np.float32) for _ in range(n)]
    outs, errs = [None] * n, []
    ring = schedc.Plan("ring", ranks=n)

    def rank(r):
        try:
            with schedc.Comm.net(r, n, allgather=make(r), timeout=30) as c:
                assert c.backend == "net" and c.rank == r and c.nranks == n
                x = ins[r].copy()
                c.allreduce(x, plan=ring)
                outs[r] = x
        except BaseException as e:
            errs.append(e)
    run_threads(rank, n)
    assert not errs, errs
    for r in range(n):
        assert reduce_by_plan(ring, r, ins).tobytes() == outs[r].tobytes()


def test_comm_net_shrink():
    """Comm.shrink on net: three ranks in threads; rank 2 closes its communicator (gone; within one
    process nothing is seen to die, so the others find it silent past the 1 s timeout), ranks 0 and
    1 fail their allreduce, shrink, and get a communicator of the two of them renumbered in order,
    whose allreduce is exact (integers). Then a shrink with no failure gives both again."""
    n = 3
    make = threads_allgather(n)
    got, errs = [None] * n, []
    gone = threading.Event()

    def rank(r):
        try:
            c = schedc.Comm.net(r, n, allgather=make(r), timeout=1)
            if r == 2:
                c.close()
                gone.set()
                return
            gone.wait(30)
            x = np.full(5, r + 1, np.float32)
            with pytest.raises(schedc.Error):
                c.allreduce(x)
            s = c.shrink()
            c.close()
            y = np.full(5, 10 * (r + 1), np.float32)
            s.allreduce(y)
            first = (s.rank, s.nranks, [s.parent_rank(i) for i in range(s.nranks)], y.tolist())
            s2 = s.shrink()  # no failure: everyone
            s.close()
            z = np.full(3, r + 1, np.float32)
            s2.allreduce(z)
            got[r] = first + (s2.nranks, z.tolist())
            s2.close()
        except BaseException as e:
            errs.append(e)
    run_threads(rank, n)
    assert not errs, errs
    assert got[0] == (0, 2, [0, 1], [30.0] * 5, 2, [3.0] * 3)
    assert got[1] == (1, 2, [0, 1], [30.0] * 5, 2, [3.0] * 3)


def test_comm_net_allgather_that_raises():
    """An allgather that raises: schedc.Error naming the exception, from the exception."""
    def boom(mine):
        raise KeyError("no such key in the store")
    with pytest.raises(schedc.Error) as ei:
        schedc.Comm.net(0, 2, allgather=boom, timeout=5)
    assert "the allgather raised KeyError" in str(ei.value) and isinstance(ei.value.__cause__, KeyError)
    with pytest.raises(ValueError):
        schedc.Comm.net(0, 2, timeout=5)


def run_ranks(script, args, n, hosts=None, extra=None):
    """n ranks of `script` by hand (RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT); with hosts, rank r on
    pretend host r * hosts // n (SCHEDC_HOST_ID)."""
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   **(extra or {}))
        env.pop("SCHEDC_HOST_ID", None)
        if hosts:
            env["SCHEDC_HOST_ID"] = "pyhost%d" % (r * hosts // n)
        procs.append(subprocess.Popen([sys.executable, script] + args, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=180)[0] for p in procs]
    for r, p in enumerate(procs):
        assert p.returncode == 0, "rank %d exit %s:\n%s" % (r, p.returncode, outs[r][-3000:])


@pytest.mark.skipif(not TORCH2, reason="DDP over a Python process group needs torch 2.x (python.torch2)")
def test_process_group_across_hosts_ddp_same_weights(tmp_path):
    """init_process_group("schedc") on two pretend hosts: the group's store bootstraps net; DDP
    (several buckets, three steps) ends with the weights of the same job on one host (shm).
    (tests/net/test_net_cluster.sh runs it on 2 x 2 real hosts under torchrun --nnodes 2.)"""
    script = os.path.join(ROOT, "tests", "net", "ddp_net.py")
    run_ranks(script, [str(tmp_path / "two")], 2, hosts=2)
    run_ranks(script, [str(tmp_path / "one")], 2)
    two = sorted(open(p).read().split() for p in tmp_path.glob("two.rank*"))
    one = sorted(open(p).read().split() for p in tmp_path.glob("one.rank*"))
    assert [x[1] for x in two] == ["net"] * 2 and [x[1] for x in one] == ["shm"] * 2
    assert [x[2] for x in two] == [x[2] for x in one] and len({x[2] for x in two}) == 1


@pytest.mark.skipif(not TORCH2, reason="the TCPStore wire protocol net speaks is torch >= 2.0's")
def test_c_ranks_bootstrap_through_torch_store(tmp_path):
    """schedc run --backend net under torchrun's variables with TORCHELASTIC_USE_AGENT_STORE=True:
    the ranks' records go through the TCPStore at MASTER_ADDR:MASTER_PORT (here this test's, as
    torchrun's agent serves it), the digests are the threads backend's, and the last rank out
    deletes every key it made."""
    import datetime

    import torch.distributed as dist
    store = dist.TCPStore("127.0.0.1", 0, 1, True, timeout=datetime.timedelta(seconds=30))
    store.set("before", "x")
    keys = store.num_keys()
    schedc_bin = os.path.join(os.path.dirname(os.environ.get("SCHEDC_LIBRARY", ROOT + "/build/lib/x")), "..", "schedc")
    args = [schedc_bin, "run", os.path.join(ROOT, "schedules", "ring.lua"), "--count", "10007", "--dtype", "bf16"]
    procs = [subprocess.Popen(args + ["--backend", "net"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="3", LOCAL_WORLD_SIZE="3",
                                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port),
                                       TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RUN_ID="t",
                                       TORCHELASTIC_RESTART_COUNT="0", SCHEDC_TIMEOUT="30")) for r in range(3)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    want = subprocess.run(args + ["--ranks", "3"], capture_output=True, text=True, check=True).stdout
    digests = sorted(x for x in outs[0].splitlines() if x.startswith("rank "))
    assert digests == sorted(x for x in want.splitlines() if x.startswith("rank ")), (outs[0], want)
    assert store.num_keys() == keys, "keys left in the store"
