# test_compress.py — compression from Python (docs/compression.md): Comm.allreduce / reduce /
# reduce_scatter with wire= and topk= on threads communicators, bit for bit against quant_ref.py's
# rational evaluation; error feedback's residual (exactly v - q 2^g); argument refusals. In jobs
# (compress_worker.py, gloo processes): the hooks' torch path over gloo against the C library's
# results (the same bits, residuals included), DDP with quantized_hook and topk_hook giving one set
# of weights on every rank, state_dict round trips; on torch 2.x the schedc backend: Options(wire=),
# the hooks through the backend (the same weights as over gloo), sparse COO all_reduce.
import os
import subprocess
import sys

import pytest
import torch

import schedc
import ranks
from exact_ref import exact_sum
from quant_ref import quant_sum, topk_sum

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
DTYPES = [torch.float32, torch.bfloat16, torch.float16]


def run_ranks(comms, fn):
    res = ranks.run_ranks(comms, fn, timeout=120)
    errs = [x for x in res if isinstance(x, BaseException)]
    assert not errs, errs
    return res


@pytest.fixture(scope="module", params=[3])
def comms(request):
    cs = schedc.Comm.threads(request.param, timeout=60)
    yield cs
    for c in cs:
        c.close()


def data(seed, k, dt, spread=8):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(k, generator=g, dtype=torch.float64) * 2.0 ** torch.randint(-spread, 3, (k,), generator=g)
    x[:3] = torch.tensor([0.0, -0.0, 1.5])
    return x.to(dt)


def bits(t):
    return t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("wire", ["q8", "q16"])
@pytest.mark.parametrize("op", ["sum", "avg"])
def test_allreduce_wire_equals_rational_reference(comms, dt, wire, op):
    n = len(comms)
    ins = [data(10 * r + len(op), 300, dt) for r in range(n)]
    want, _, _ = quant_sum(ins, dt, int(wire[1:]), op == "avg")
    outs = run_ranks(comms, lambda r, c: c.allreduce(ins[r].clone(), op=op, wire=wire))
    for o in outs:
        assert torch.equal(bits(o), bits(want))


def test_reduce_scatter_and_reduce_on_a_wire(comms):
    n = len(comms)
    ins = [data(7 + r, 30 * n, torch.float32) for r in range(n)]
    want, _, _ = quant_sum(ins, torch.float32, 16)
    outs = run_ranks(comms, lambda r, c: c.reduce_scatter(ins[r].clone(), wire="q16"))
    for r, o in enumerate(outs):
        assert torch.equal(bits(o), bits(want[30 * r:30 * (r + 1)]))
    outs = run_ranks(comms, lambda r, c: c.reduce(ins[r].clone(), root=1, wire="q16"))
    assert torch.equal(bits(outs[1]), bits(want)) and torch.equal(outs[0], ins[0])


def test_error_feedback_residual_is_exact(comms):
    n = len(comms)
    res = [torch.zeros(200) for _ in range(n)]
    for step in range(3):
        ins = [data(100 * step + r, 200, torch.float32) for r in range(n)]
        vs = [ins[r] + res[r] for r in range(n)]  # the feedback addition: one f32 add
        want, g, qs = quant_sum(vs, torch.float32, 8)
        outs = run_ranks(comms, lambda r, c: c.allreduce(ins[r].clone(), wire="q8", residual=res[r]))
        for r in range(n):
            assert torch.equal(bits(outs[r]), bits(want))
            e = torch.tensor([float(v) - q * 2.0 ** g for v, q in zip(vs[r].tolist(), qs[r])], dtype=torch.float64)
            assert torch.equal(res[r], e.float()) and torch.equal(e.float().double(), e)  # exact


@pytest.mark.parametrize("dt", DTYPES)
def test_topk_equals_exact_sum_of_the_ranks_top_k(comms, dt):
    n = len(comms)
    ins = [data(50 + r, 400, dt, spread=20) for r in range(n)]
    for frac, op in ((0.05, "sum"), (0.7, "avg")):  # sparse; dense fallback (3 * 280 > 2 * 400)
        want = topk_sum(ins, dt, frac, op == "avg")
        outs = run_ranks(comms, lambda r, c: c.allreduce(ins[r].clone(), op=op, topk=frac))
        for o in outs:
            assert torch.equal(bits(o), bits(want))


def test_refusals(comms):
    c = comms[0]
    for kw, err, msg in [({"wire": "q4"}, ValueError, "'q8' or 'q16'"), ({"topk": 1.5}, ValueError, "(0, 1]"),
                         ({"topk": True}, ValueError, "(0, 1]"),
                         ({"wire": "q8", "residual": torch.zeros(3)}, ValueError, "4 elements"),
                         ({"wire": "q8", "residual": torch.zeros(4, dtype=torch.float64)}, ValueError, "dtype"),
                         ({"wire": "q8", "exact": True}, ValueError, "exclude")]:
        with pytest.raises(err, match=msg.replace("(", r"\(").replace(")", r"\)")):
            c.allreduce(torch.zeros(4), **kw)
    with pytest.raises(schedc.Error, match="wire q8 takes op sum or avg, not max"):  # the library's, one rank
        schedc.Comm.threads(1)[0].allreduce(torch.zeros(4), op="max", wire="q8")
    with pytest.raises(schedc.Error, match="sendbuf of rank 0 holds NaN at element 2"):
        schedc.Comm.threads(1)[0].allreduce(torch.tensor([1.0, 2.0, float("nan")]), wire="q16")


# ---- jobs ------------------------------------------------------------------------------------------
def job(n, mode, tmp, env=None):
    import socket
    os.makedirs(str(tmp), exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, os.path.join(HERE, "compress_worker.py"), mode, str(tmp)],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                                       MASTER_PORT=str(port), **(env or {})),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(n)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    for r, p in enumerate(procs):
        assert p.returncode == 0, "rank %d:\n%s" % (r, outs[r][-3000:])
    return [torch.load(os.path.join(str(tmp), "rank%d.pt" % r)) for r in range(n)]


def test_torch_path_over_gloo_equals_the_library(tmp_path):
    """The hooks' torch path (another group: gloo here) computes the C library's bits: results and
    residuals of q8/q16 (f32, bf16, f16; sum, avg) compared call for call; DDP with quantized_hook
    and topk_hook gives every rank the same weights; state_dict round trips."""
    res = job(3, "gloo", tmp_path)
    for r in res:
        assert r["mismatch"] == [], r["mismatch"]
        assert r["compared"] >= 24
    for key in ("ddp_q8", "ddp_q16", "ddp_topk"):
        for r in res[1:]:
            assert torch.equal(r[key], res[0][key]), key
    assert res[0]["state_ok"]


def test_error_feedback_checkpointed_and_resumed(tmp_path):
    """The recipe of docs/compression.md: DDP with quantized_hook (q8, error feedback) on gloo,
    checkpointed with schedc.checkpoint.save (the hook state beside model and optimizer; whole and
    sharded) at step 3 of 6 and resumed into fresh objects, ends with the straight run's weights bit
    for bit; each rank gets its own residuals back (they differ between ranks); without them the
    weights differ; at another world size the checkpoint is refused naming the reason."""
    import schedc.checkpoint as ck
    import schedc.torch as st
    res = job(2, "ckpt", tmp_path)
    for r in res:
        for kind in ("whole", "sharded"):
            assert torch.equal(r["resumed_" + kind], r["straight"]), kind
            saved, loaded = r["residual_" + kind], r["loaded_" + kind]
            assert saved and sorted(saved) == sorted(loaded)
            assert all(torch.equal(saved[k], loaded[k]) for k in saved), kind
        assert not torch.equal(r["resumed_zero_residuals"], r["straight"])
    a, b = res[0]["residual_whole"], res[1]["residual_whole"]
    assert any(not torch.equal(a[k], b[k]) for k in a)  # per rank: rank 0's everywhere would be wrong
    for kind in ("whole", "sharded"):  # this process: world size 1
        with pytest.raises(ck.CheckpointError, match="holds the state of each of 2 ranks .*resume with 2"):
            ck.load(str(tmp_path / kind), {"comm": st.QuantizedState(bits=8)}, rng=False)


@pytest.mark.skipif(not TORCH2, reason="DDP over the schedc backend needs torch 2.x (python.torch2)")
def test_schedc_backend_wire_hooks_and_sparse(tmp_path):
    """On the schedc backend: an Options(wire="q8") group's all_reduce is the library's q8 sum; DDP
    with quantized_hook through the backend ends with the weights of the same run over gloo (the
    torch path), bit for bit; sparse COO all_reduce gives every rank the coalesced rank-order sum."""
    a = job(2, "backend", tmp_path / "a")
    b = job(2, "gloo_ddp", tmp_path / "b")
    for r in a:
        assert r["wire_ok"] and r["sparse_ok"], r
    for r in range(2):
        assert torch.equal(a[r]["ddp_q8"], b[0]["ddp_q8"])
        assert torch.equal(a[r]["sparse"].to_dense(), a[0]["sparse"].to_dense())
