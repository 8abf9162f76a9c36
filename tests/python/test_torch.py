# test_torch.py — schedc.torch in real torch.distributed jobs (gloo), ranks launched by hand with
# RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT: the DDP hook and CanonicalGrads under 1, 2 and 4
# processes checked bit for bit against trees.py's evaluation of Plan.order(); concurrent jobs
# with TORCHELASTIC_RUN_ID=none; no shared-memory segment left behind.
import glob
import os
import socket
import subprocess
import sys

import numpy as np
import pytest
import torch

import schedc
from trees import canonical, evaluate, parse, reduce_by_plan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_job(n, args, out, extra_env=None):
    port = free_port()
    procs = []
    for r in range(n):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   **(extra_env or {}))
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py")] + args[:1] + [str(out)]
                                      + args[1:], env=env))
    return procs


def wait_job(procs):
    for p in procs:
        assert p.wait(timeout=120) == 0


def results(out, n):
    return [torch.load(os.path.join(out, "rank%d.pt" % r)) for r in range(n)]


@pytest.fixture(scope="module", autouse=True)
def no_segments_left():
    before = set(glob.glob("/dev/shm/schedc-u*"))
    yield
    left = set(glob.glob("/dev/shm/schedc-u*")) - before
    assert not left, "segments left behind: %s" % sorted(left)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One job per world size running worker.py's "train": the hook, then CanonicalGrads."""
    out = {}
    for n in (1, 2, 4):
        d = tmp_path_factory.mktemp("train%d" % n)
        wait_job(start_job(n, ["train", str(L)], d))
        out[n] = results(d, n)
    return out


L = 4


def check_hook(res, n):
    """The DDP hook's buckets, each rank's after = the plan's trees over every rank's before."""
    plan = schedc.canonical_plan(n)
    ncalls = len(res[0]["calls"])
    assert ncalls >= 2 and all(len(x["calls"]) == ncalls for x in res)  # a bucket or more per iteration
    for i in range(ncalls):
        ins = [x["calls"][i][0].numpy() for x in res]
        for r in range(n):
            want = reduce_by_plan(plan, r, ins) / np.float32(n)  # sum, then one division
            assert want.tobytes() == res[r]["calls"][i][1].numpy().tobytes(), (i, r)
    assert len({x["digest"] for x in res}) == 1
    # overlap: every bucket was reduced on the hook's background thread, and reducing inside the
    # hook instead gives the same weights
    assert all(x["threads"] == ["schedc-ddp-hook"] for x in res)
    assert all(x["digest_inline"] == x["digest"] for x in res)
    if n > 1:
        assert all(x["mismatch"] == "SCHEDC_EMISMATCH" for x in res)


def check_canonical(res, n):
    """CanonicalGrads: every rank's gradient = the canonical trees over all leaves' gradients."""
    leaves = {}
    for x in res:
        leaves.update({k: v.numpy() for k, v in x["leaves"].items()})
    assert sorted(leaves) == list(range(L))
    # independent evaluation: each rank's block by the canonical tree over its leaves, then the
    # ranks by the tree the plan prints; one division by L
    m = L // n
    plan = schedc.canonical_plan(n)
    blocks = [evaluate(canonical(r * m, m), lambda i: leaves[i]) for r in range(n)]
    for r in range(n):
        want = reduce_by_plan(plan, r, blocks) / np.float32(L)
        assert want.tobytes() == res[r]["grad"].numpy().tobytes(), (n, r)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_hook_bits_equal_plan_trees(trained, n):
    check_hook(trained[n], n)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_canonical_grads_equal_trees(trained, n):
    check_canonical(trained[n], n)


def test_canonical_grads_same_bits_for_1_2_4(trained):
    g = {n: trained[n][0]["grad"].numpy().tobytes() for n in (1, 2, 4)}
    assert g[1] == g[2] == g[4]


def test_mpi_backend_same_bits_as_shm(trained, tmp_path):
    """Across hosts init_comm uses MPI (here forced on one host with backend='mpi', under mpirun):
    the hook and CanonicalGrads give the bits the shm job of the same size gave, bucket by bucket."""
    n = 2
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()), SCHEDC_TEST_BACKEND="mpi",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    fwd = [a for k in ("MASTER_ADDR", "MASTER_PORT", "SCHEDC_TEST_BACKEND", "PYTHONPATH", "SCHEDC_LIBRARY",
                       "OMP_NUM_THREADS", "SCHEDC_SPIN") if k in env for a in ("-x", k)]
    subprocess.run(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n)] + fwd +
                   [sys.executable, os.path.join(HERE, "worker.py"), "train", str(tmp_path), str(L)],
                   env=env, timeout=180, check=True)
    got, want = results(tmp_path, n), trained[n]
    for r in range(n):
        assert got[r]["backend"] == "mpi" and want[r]["backend"] == "shm"
        assert got[r]["digest"] == want[r]["digest"] and got[r]["digest_inline"] == want[r]["digest"]
        assert len(got[r]["calls"]) == len(want[r]["calls"])
        for (gb, ga), (wb, wa) in zip(got[r]["calls"], want[r]["calls"]):
            assert gb.numpy().tobytes() == wb.numpy().tobytes() and ga.numpy().tobytes() == wa.numpy().tobytes()
        assert got[r]["grad"].numpy().tobytes() == want[r]["grad"].numpy().tobytes()
        assert got[r]["mismatch"] == "SCHEDC_EMISMATCH"


def test_init_comm_net_across_hosts_same_bits_as_shm(trained, tmp_path):
    """init_comm(backend=None) on two pretend hosts (SCHEDC_HOST_ID) without an MPI launcher picks
    net (UCX, bootstrapped over the group): the DDP hook's buckets and CanonicalGrads' gradient
    are the shm job's bits, bucket by bucket."""
    n = 2
    if schedc_net_missing():
        pytest.skip("the library has no net backend (libucx-dev)")
    port = free_port()
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), "train", str(tmp_path), str(L)],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), SCHEDC_HOST_ID="pyhost%d" % r)) for r in range(n)]
    wait_job(procs)
    got, want = results(tmp_path, n), trained[n]
    for r in range(n):
        assert got[r]["backend"] == "net" and want[r]["backend"] == "shm"
        assert got[r]["digest"] == want[r]["digest"] and len(got[r]["calls"]) == len(want[r]["calls"])
        for (gb, ga), (wb, wa) in zip(got[r]["calls"], want[r]["calls"]):
            assert gb.numpy().tobytes() == wb.numpy().tobytes() and ga.numpy().tobytes() == wa.numpy().tobytes()
        assert got[r]["grad"].numpy().tobytes() == want[r]["grad"].numpy().tobytes()


def schedc_net_missing():
    try:
        schedc.uid_net()
        return False
    except schedc.Error as e:
        if e.status != "SCHEDC_EUNAVAIL" or os.environ.get("SCHEDC_REQUIRE_TOOLS", "0") not in ("", "0"):
            raise
        return True


def test_init_comm_mpi_refused_without_launcher(tmp_path):
    """backend='mpi' in a job no MPI launcher started: the same RuntimeError on every rank, no hang."""
    port = free_port()
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), "value", str(tmp_path), "1"],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), SCHEDC_TEST_BACKEND="mpi"),
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    assert all(p.returncode != 0 for p in procs)
    for e in errs:
        assert "RuntimeError: schedc.torch.init_comm: " in e and "needs every rank started by an MPI launcher" in e, e


@pytest.mark.parametrize("envs, msgs", [
    # rank 0 went to MPI's init while rank 1 waited for the shm id: a hang (under mpirun, or without
    # one until gloo's 30-minute timeout) before the requested backends were gathered and compared
    ([{"SCHEDC_TEST_BACKEND": "mpi"}, {"SCHEDC_TEST_BACKEND": "shm"}],
     ["RuntimeError: schedc.torch.init_comm: the ranks ask for different backends (rank 0: 'mpi', rank 1: 'shm'"] * 2),
    # a bad value on one rank raised there alone, leaving the others in the gather
    ([{}, {"SCHEDC_TEST_BACKEND": "bogus"}],
     ["ValueError: schedc.torch.init_comm: backend must be None (automatic), 'shm', 'mpi' or 'net', "
      "not 'bogus' (rank 1)"] * 2),
    # a rank outside `group` got empty gathers back and a message about the mpi backend
    ([{"SCHEDC_TEST_GROUP": "0"}, {"SCHEDC_TEST_GROUP": "0"}],
     [None, "ValueError: schedc.torch.init_comm: this process (global rank 1) is not a member of `group`"]),
    ([{"SCHEDC_TEST_GROUP": "0", "SCHEDC_TEST_BACKEND": "mpi"}] * 2,
     ["needs every rank started by an MPI launcher", "is not a member of `group`"]),
])
def test_init_comm_bad_arguments_raise_not_hang(tmp_path, envs, msgs):
    """Arguments that differ across ranks or exclude a rank: a message naming the problem on the
    ranks concerned, never a rank waiting alone."""
    port = free_port()
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "worker.py"), "value", str(tmp_path), "1"],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), **envs[r]),
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    for r, m in enumerate(msgs):
        if m is not None:
            assert procs[r].returncode != 0 and m in errs[r], errs[r]


def test_concurrent_jobs_with_run_id_none(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env = {"TORCHELASTIC_RUN_ID": "none", "SCHEDC_JOB": "none"}
    pa = start_job(2, ["value", "1"], a, env)
    pb = start_job(2, ["value", "1000"], b, env)
    wait_job(pa)
    wait_job(pb)
    for out, v in ((a, 1.0), (b, 1000.0)):
        for x in results(out, 2):
            assert torch.equal(x["value"], torch.full((1000,), v * 3))


def test_example_canonical_digest_same_for_1_2():
    digests = {}
    for n in (1, 2):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "torch_ddp.py"), "--nprocs", str(n),
                            "--reduce", "schedc", "--microbatches", "4", "--order", "canonical", "--steps", "2"],
                           capture_output=True, text=True, timeout=180)
        assert p.returncode == 0, p.stderr
        assert "ranks agree: yes" in p.stdout
        digests[n] = [l for l in p.stdout.splitlines() if l.startswith("weights digest: ")][-1]
    assert digests[1] == digests[2], digests


def test_canonical_grads_refuses_uncleared_grad():
    """The documented loop clears .grad after opt.step(); without it the next step's first backward
    added into reduce()'s result and the weights differed between 1, 2 and 4 processes, silently."""
    import schedc.torch as st
    comm = schedc.Comm.threads(1)[0]
    net = torch.nn.Linear(3, 2)
    cg = st.CanonicalGrads(net.parameters(), 2, comm)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for clear in ("none", "zero_grad(set_to_none=True)"):
        for leaf in cg.my_leaves:
            net(torch.ones(1, 3)).sum().backward()
            cg.add(leaf)
        cg.reduce()
        opt.step()
        if clear != "none":
            opt.zero_grad(set_to_none=True)
        net(torch.ones(1, 3)).sum().backward()
        if clear == "none":
            with pytest.raises(RuntimeError, match=r"p.grad still holds the previous reduce\(\)'s gradient"):
                cg.add(0)
            opt.zero_grad(set_to_none=True)
            net(torch.ones(1, 3)).sum().backward()
        cg.add(0)
        net(torch.ones(1, 3)).sum().backward()
        cg.add(1)
        cg.reduce()
        opt.zero_grad(set_to_none=True)
    cg.close()
    comm.close()
