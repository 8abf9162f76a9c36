# test_recover.py — losing ranks from Python (docs/recovery.md, docs/python.md "Recovery"):
# Comm.shrink on threads (the killed rank refused, the survivors' members and their exact sum);
# the shrink recipe in processes (a rank SIGKILLed, the survivors shrink and redo the step with
# CanonicalGrads(exact) over the 12 leaves: the weights of a 1-rank run); on torch 2.x, FSDP2
# sharded and rank-0 checkpoints saved at 2 ranks and loaded at 3 and 1 (every parameter and Adam
# state bit-equal to what was saved), and examples/elastic_train.py under torchrun: kills inside a
# collective, before a step and inside a checkpoint write, one per attempt of --max-restarts 3,
# then a second launch at another --nproc-per-node: "weights W" of a 1-rank run each time.
import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest
import torch

import schedc

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
EXAMPLE = os.path.join(ROOT, "examples", "elastic_train.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env(**kw):
    e = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), HERE]))
    e.update({k: str(v) for k, v in kw.items()})
    return e


def run_ranks(n, args, timeout=240, **kw):
    port = free_port()
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "ckpt_worker.py")] + args,
                              env=env(RANK=r, WORLD_SIZE=n, MASTER_ADDR="127.0.0.1", MASTER_PORT=port, **kw),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(n)]
    outs = [p.communicate(timeout=timeout)[0] for p in procs]
    return [p.returncode for p in procs], outs


def test_shrink_threads(monkeypatch):
    monkeypatch.setenv("SCHEDC_INJECT", "kill:2:0")
    comms = schedc.Comm.threads(4, timeout=30)
    monkeypatch.delenv("SCHEDC_INJECT")
    got = [None] * 4

    def rank(r):
        t = torch.full((300,), float(r + 1))
        try:
            comms[r].allreduce(t, exact=True)
            got[r] = "no error"
            return
        except schedc.Error as e:
            assert e.status == "SCHEDC_EPEER", e
        try:
            c = comms[r].shrink()
        except schedc.Error as e:
            got[r] = e.message
            return
        t = torch.full((300,), float(r + 1))
        c.allreduce(t, exact=True)
        got[r] = (c.rank, c.nranks, [c.parent_rank(i) for i in range(c.nranks)], float(t[0]))
        c.close()

    ts = [threading.Thread(target=rank, args=(r,)) for r in range(4)]
    [t.start() for t in ts]
    [t.join(60) for t in ts]
    assert "rank 2 is the rank that died" in got[2]
    assert got[0] == (0, 3, [0, 1, 3], 1 + 2 + 4) and got[1] == (1, 3, [0, 1, 3], 7.0) and got[3] == (2, 3, [0, 1, 3], 7.0)
    for c in comms:
        c.close()


def test_shrink_processes(tmp_path, n=6, die=1):
    """The recipe: survivors shrink, agree on the step, redo it on their leaves (12 on 5: 3, 3, 2, 2, 2):
    a 1-rank run's weights."""
    ref = str(tmp_path / "ref.pt")
    codes, outs = run_ranks(1, ["shrink", "recref%d" % os.getpid(), "1", "-1", ref])
    assert codes == [0], outs[0][-2000:]
    out = str(tmp_path / "out.pt")
    codes, outs = run_ranks(n, ["shrink", "rec%d%d" % (os.getpid(), n), str(n), str(die), out])
    assert codes == [-9 if r == die else 0 for r in range(n)], "\n".join(o[-1500:] for o in outs)
    got, want = torch.load(out), torch.load(ref)
    assert got["members"] == [r for r in range(n) if r != die]
    assert got["weights"] == want["weights"], (got, want)


@pytest.mark.skipif(not TORCH2, reason="FSDP2 (fully_shard) and DTensor need torch 2.x")
def test_fsdp_checkpoint_other_world(tmp_path):
    """Saved at 2 ranks, sharded and whole; loaded at 3 and at 1: every tensor as saved."""
    d = str(tmp_path / "ck")
    saved = str(tmp_path / "saved.pt")
    codes, outs = run_ranks(2, ["fsdp", "save", d, saved])
    assert codes == [0, 0], "\n".join(o[-2000:] for o in outs)
    assert os.listdir(os.path.join(d, "rank0")) == ["ckpt-0000000002.bin"]
    assert sorted(os.listdir(os.path.join(d, "sharded", "ckpt-0000000002"))) == [
        "COMMIT.bin", "rank00000-of-00002.bin", "rank00001-of-00002.bin"]
    want = torch.load(saved)["saved"]
    assert len(want) == 12
    for n in (3, 1):
        out = str(tmp_path / ("loaded%d.pt" % n))
        codes, outs = run_ranks(n, ["fsdp", "load", d, out])
        assert codes == [0] * n, "\n".join(o[-2000:] for o in outs)
        for kind, got in torch.load(out).items():
            assert sorted(got) == sorted(want)
            for k in want:
                assert torch.equal(got[k], want[k]), (n, kind, k)


def torchrun():
    t = os.path.join(os.path.dirname(sys.executable), "torchrun")
    return t if os.path.exists(t) else None


def weights(out):
    lines = [x for x in out.splitlines() if x.startswith("weights ")]
    return lines[-1].split()[1] if lines else None


@pytest.mark.skipif(not TORCH2 or not torchrun(), reason="torchrun of torch 2.x (Debian's 1.13 torchrun crashes on 3.11)")
def test_elastic_train_torchrun(tmp_path):
    args = ["--order", "exact", "--microbatches", "12"]
    r = subprocess.run([sys.executable, EXAMPLE, "--steps", "12", "--checkpoint-dir", str(tmp_path / "ref")] + args,
                       env=env(RANK=0, WORLD_SIZE=1, MASTER_ADDR="127.0.0.1", MASTER_PORT=free_port()),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    want = weights(r.stdout)
    assert want, r.stdout[-3000:]
    d = str(tmp_path / "ck")
    # attempt 0: rank 1 killed inside a collective; 1: rank 2 before step 7; 2: rank 0 halfway through
    # the checkpoint of step 10; 3: goes through from the newest good checkpoint
    r = subprocess.run([torchrun(), "--standalone", "--nproc-per-node", "3", "--max-restarts", "3", EXAMPLE,
                        "--steps", "12", "--checkpoint-dir", d, "--inject", "kill:1:1", "--die", "2:7@1",
                        "--die", "0:10:ckpt@2"] + args, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=900)
    out = r.stdout
    assert r.returncode == 0 and weights(out) == want, out[-4000:]
    # every survivor of attempt 0 named the dead rank; attempts 2 and 3 resumed from checkpoints
    assert out.count("which died") >= 1 and "SCHEDC_EPEER" in out, out[-4000:]
    assert "resume from %s/ckpt-0000000006.bin" % d in out and "resume from %s/ckpt-0000000008.bin" % d in out, out[-4000:]
    assert sorted(os.listdir(d)) == ["ckpt-0000000008.bin", "ckpt-0000000010.bin", "ckpt-0000000012.bin"]
    # a second launch with more steps and another process count continues a first one's checkpoint:
    # the 3-rank launch's of step 8, alone in a new directory, continued by 4 ranks to step 12
    d2 = str(tmp_path / "ck2")
    os.makedirs(d2)
    shutil.copy(os.path.join(d, "ckpt-0000000008.bin"), d2)
    r = subprocess.run([torchrun(), "--standalone", "--nproc-per-node", "4", EXAMPLE, "--steps", "12",
                        "--checkpoint-dir", d2] + args, env=env(), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:]
    assert weights(r.stdout) == want and "4 ranks resume from %s/ckpt-0000000008.bin" % d2 in r.stdout, r.stdout[-3000:]
    shutil.rmtree(str(tmp_path), ignore_errors=True)


@pytest.mark.skipif(not TORCH2 or not torchrun() or os.environ.get("SCHEDC_TEST_ELASTIC") != "1",
                    reason="by hand (SCHEDC_TEST_ELASTIC=1; about 2 minutes): torchrun --nnodes=1:2, a node lost")
def test_elastic_nodes(tmp_path):
    """Two torchrun agents (--nnodes=1:2, c10d rendezvous hosted by the first) of 2 ranks each; at step
    9 rank 2 kills its node's agent and itself: the other node's ranks fail naming it, its agent
    restarts them alone, and they resume from the newest checkpoint at 2 ranks: a 1-rank run's weights."""
    args = ["--steps", "16", "--order", "exact"]
    r = subprocess.run([sys.executable, EXAMPLE, "--checkpoint-dir", str(tmp_path / "ref")] + args,
                       env=env(RANK=0, WORLD_SIZE=1, MASTER_ADDR="127.0.0.1", MASTER_PORT=free_port()),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    want = weights(r.stdout)
    d = str(tmp_path / "ck")
    common = ["--nnodes=1:2", "--nproc-per-node=2", "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:%d" % free_port(),
              "--rdzv-id=elastic%d" % os.getpid(), "--max-restarts=3", "--monitor-interval=1"]
    conf = "last_call_timeout=30,join_timeout=300"
    a = subprocess.Popen([torchrun()] + common + ["--rdzv-conf=is_host=1," + conf, EXAMPLE, "--checkpoint-dir", d]
                         + args, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    b = subprocess.Popen([torchrun()] + common + ["--rdzv-conf=is_host=0," + conf, EXAMPLE, "--checkpoint-dir", d,
                                                  "--die", "2:9:node"] + args, env=env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    out = a.communicate(timeout=900)[0]
    b.wait(timeout=60)
    assert a.returncode == 0 and weights(out) == want, out[-4000:]
    assert "which died" in out or "finished early" in out, out[-3000:]
    assert "2 ranks resume from %s/ckpt-0000000008.bin" % d in out, out[-3000:]
