# test_binding.py — the ctypes binding: every dtype and collective on a threads communicator
# (ranks as Python threads), results compared bit for bit with trees.py's evaluation of the
# plan's printed trees, and the errors (wrong dtype, non-contiguous, size mismatch, bad plan).
import array

import numpy as np
import pytest
import torch

import schedc
from ranks import run_ranks
from trees import canonical, chunk_range, evaluate, parse, reduce_by_plan

N = 3




@pytest.fixture(scope="module")
def comms():
    cs = schedc.Comm.threads(N, timeout=30)
    yield cs
    for c in cs:
        c.close()


def data(r, k, dt):
    rng = np.random.default_rng(10 + r)
    if dt in ("i32", "i64"):
        return rng.integers(-1000, 1000, k).astype(np.int32 if dt == "i32" else np.int64)
    return (rng.standard_normal(k) * 10 ** rng.uniform(-3, 3, k)).astype(np.float32)


TORCH = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
         "i32": torch.int32, "i64": torch.int64}


@pytest.mark.parametrize("dt", list(TORCH))
@pytest.mark.parametrize("which", ["canonical", "ring"])
def test_allreduce_torch_dtypes(comms, dt, which):
    plan = schedc.canonical_plan(N) if which == "canonical" else schedc.Plan("ring", ranks=N)
    k = 1001
    ins = [torch.from_numpy(data(r, k, dt)).to(TORCH[dt]) for r in range(N)]
    bufs = [t.clone() for t in ins]
    res = run_ranks(comms, lambda r, c: c.allreduce(bufs[r], plan=plan))
    assert all(not isinstance(x, BaseException) for x in res), res
    for r in range(N):
        if dt in ("f16", "bf16"):
            # accumulated in f32 (the library's working type), rounded once at the end
            want = torch.from_numpy(reduce_by_plan(plan, r, [t.float().numpy() for t in ins])).to(TORCH[dt])
        else:
            want = torch.from_numpy(reduce_by_plan(plan, r, [t.numpy() for t in ins], acc=None))
        assert torch.equal(bufs[r].view(-1).view(torch.uint8 if dt in ("f16", "bf16") else bufs[r].dtype),
                           want.view(torch.uint8 if dt in ("f16", "bf16") else want.dtype)), (dt, r)


@pytest.mark.parametrize("npdt", [np.float32, np.float64, np.float16, np.int32, np.int64])
def test_allreduce_numpy_and_avg(comms, npdt):
    plan = schedc.canonical_plan(N)
    ins = [data(r, 257, "f32" if np.dtype(npdt).kind == "f" else "i64").astype(npdt) for r in range(N)]
    bufs = [a.copy() for a in ins]
    op = "avg" if np.dtype(npdt).kind == "f" else "sum"
    res = run_ranks(comms, lambda r, c: c.allreduce(bufs[r], op=op, plan=plan))
    assert all(not isinstance(x, BaseException) for x in res), res
    acc = np.float32 if npdt == np.float16 else None
    for r in range(N):
        want = reduce_by_plan(plan, r, ins, acc=acc)
        if op == "avg":
            want = want / want.dtype.type(N)
        assert want.astype(npdt).tobytes() == bufs[r].tobytes()


def test_array_array_buffer(comms):
    bufs = [array.array("f", [float(r + 1)] * 7) for r in range(N)]
    run_ranks(comms, lambda r, c: c.allreduce(bufs[r], op="max"))
    assert all(list(b) == [float(N)] * 7 for b in bufs)
    # reduce_scatter in place on a plain buffer: block `rank` of the sum, returned as a view
    ins = [array.array("i", [r + 1] * (2 * N)) for r in range(N)]
    views = run_ranks(comms, lambda r, c: c.reduce_scatter(ins[r]))
    s = N * (N + 1) // 2
    assert all(list(v) == [s, s] and ins[r][2 * r:2 * r + 2] == array.array("i", [s, s])
               for r, v in enumerate(views)), views
    with pytest.raises(ValueError, match="requires grad"):
        comms[0].allreduce(torch.zeros(3, requires_grad=True))


def test_reduce_scatter_allgather_broadcast(comms):
    k = 40
    plan = schedc.canonical_plan(N, "reduce_scatter")
    ins = [data(r, N * k, "f32") for r in range(N)]
    # reduce_scatter into an output, and in place (own block of the input)
    outs = [np.empty(k, np.float32) for _ in range(N)]
    inplace = [torch.from_numpy(a.copy()) for a in ins]
    run_ranks(comms, lambda r, c: c.reduce_scatter(ins[r].copy(), outs[r], plan=plan))
    blocks = run_ranks(comms, lambda r, c: c.reduce_scatter(inplace[r], plan=plan))
    for r in range(N):
        want = reduce_by_plan(plan, r, ins)[r * k:(r + 1) * k]
        assert want.tobytes() == outs[r].tobytes()
        assert want.tobytes() == blocks[r].numpy().tobytes()
        assert want.tobytes() == inplace[r][r * k:(r + 1) * k].numpy().tobytes()
    # allgather in place and into an output
    g = [np.zeros(N * k, np.int64) for _ in range(N)]
    for r in range(N):
        g[r][r * k:(r + 1) * k] = r + 1
    run_ranks(comms, lambda r, c: c.allgather(g[r]))
    want = np.repeat(np.arange(1, N + 1, dtype=np.int64), k)
    assert all((x == want).all() for x in g)
    o = [torch.zeros(N * k, dtype=torch.bfloat16) for _ in range(N)]
    run_ranks(comms, lambda r, c: c.allgather(torch.full((k,), r + 1.0, dtype=torch.bfloat16), o[r]))
    assert all(torch.equal(x, torch.from_numpy(want).to(torch.bfloat16)) for x in o)
    # broadcast from rank 1
    b = [torch.full((33,), float(r), dtype=torch.float64) for r in range(N)]
    run_ranks(comms, lambda r, c: c.broadcast(b[r], root=1))
    assert all(torch.equal(x, torch.full((33,), 1.0, dtype=torch.float64)) for x in b)


def test_plan_order_and_check():
    p = schedc.Plan("direct", ranks=4, defines={"order": "canonical"})
    assert p.info.canonical and p.info.nranks == 4 and p.info.collective == "allreduce"
    for c in range(p.info.nchunks):
        assert parse(p.order(c, 0)) == canonical(0, 4)
    assert schedc.check("ring", ranks=4).canonical is False
    with pytest.raises(ValueError):
        schedc.check("ring", ranks=4, canonical=True)
    with pytest.raises(schedc.Error) as e:
        schedc.Plan("no-such-schedule", ranks=2)
    assert e.value.status == "SCHEDC_EIO" and "no-such-schedule" in e.value.message
    with pytest.raises(schedc.Error) as e:
        schedc.Plan("tree", ranks=2, defines={"shape": "star"})
    assert e.value.status == "SCHEDC_ESCRIPT" and "shape" in str(e.value)
    assert evaluate(parse("((r1+r0)+r2)"), lambda i: np.float32([1e8, 1, -1e8][i])) == np.float32(-1e8 + 1e8)


def test_errors_are_exceptions(comms):
    c = comms[0]
    with pytest.raises(TypeError, match="uint8"):
        c.allreduce(torch.zeros(4, dtype=torch.uint8))
    with pytest.raises(TypeError, match="not supported"):
        c.allreduce(np.zeros(4, np.complex64))
    with pytest.raises(ValueError, match="contiguous"):
        c.allreduce(torch.zeros(4, 4).t())
    with pytest.raises(ValueError, match="read-only"):
        c.allreduce(b"abcd")
    with pytest.raises(schedc.Error) as e:
        c.allreduce(torch.zeros(4), op="mean")
    assert e.value.status == "SCHEDC_EINVAL"
    with pytest.raises(TypeError, match="plan"):
        c.allreduce(torch.zeros(4), plan="ring")
    # a plan for another rank count
    with pytest.raises(schedc.Error):
        c.allreduce(torch.zeros(4), plan=schedc.Plan("ring", ranks=N + 1))


def test_size_mismatch_raises_on_every_rank():
    comms = schedc.Comm.threads(N, timeout=30)
    res = run_ranks(comms, lambda r, c: c.allreduce(torch.zeros(10 + r)))
    assert all(isinstance(x, schedc.Error) and x.status == "SCHEDC_EMISMATCH" for x in res), res
    assert all("disagree on the count" in x.message for x in res)
    # the communicator is then broken: later calls fail at once on every rank (never hang)
    res = run_ranks(comms, lambda r, c: c.allreduce(torch.ones(5)))
    assert all(isinstance(x, schedc.Error) and x.status == "SCHEDC_EPEER" for x in res), res
    for c in comms:
        c.close()


def test_close_and_context_manager():
    cs = schedc.Comm.threads(1)
    with cs[0] as c:
        t = torch.ones(3)
        c.allreduce(t)
        assert c.nranks == 1 and c.rank == 0
    with pytest.raises(ValueError, match="closed"):
        c.allreduce(t)
    c.close()  # idempotent
    assert len(schedc.unique_id()) == 16 and schedc.unique_id() != schedc.unique_id()
    a = torch.arange(10, dtype=torch.float32)
    assert schedc.digest(a) == schedc.digest(a.numpy()) == schedc.digest(a.numpy().tobytes())
    assert schedc.digest(a) != schedc.digest(a + 1)


def test_after_close_says_closed():
    """A closed communicator or plan raises ValueError naming it: synchronize() used to return
    silently, and a closed plan's NULL handle used to reach C as "no plan" (the default plan, so
    the call went through in another order than the one asked for)."""
    c = schedc.Comm.threads(1)[0]
    c.close()
    with pytest.raises(ValueError, match="communicator is closed"):
        c.synchronize()
    c = schedc.Comm.threads(1)[0]
    p = schedc.Plan("ring", ranks=1)
    p.close()
    with pytest.raises(ValueError, match="plan is closed"):
        c.allreduce(np.ones(4, np.float32), plan=p)
    for call in (lambda: p.info, lambda: p.order(0, 0), lambda: p.chunk_holder(0), lambda: p.save("/dev/null")):
        with pytest.raises(ValueError, match="plan is closed"):
            call()
    assert repr(p) == "schedc.Plan(closed)"
    with pytest.raises(ValueError, match="plan is closed"):
        schedc.Comm.shm(0, 1, job="closed-plan", plan=p)
    c.close()
