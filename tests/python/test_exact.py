# test_exact.py — exact mode from Python: Comm.allreduce / reduce_scatter / reduce(exact=True) and
# CanonicalGrads(exact=True) on threads communicators, every result compared bit for bit with
# exact_ref.py's evaluation in rationals (fractions), for several plans and rank counts; exact
# leaves give the same weights for 12 leaves on 1, 2, 3, 4 and 6 ranks.
import copy
import math
import threading

import pytest
import torch

import schedc
import schedc.torch as st
import ranks
from exact_ref import exact_sum, real_sum_rounded

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def run_ranks(comms, fn):
    """ranks.run_ranks, every rank's call required to succeed."""
    res = ranks.run_ranks(comms, fn, timeout=120)
    errs = [x for x in res if isinstance(x, BaseException)]
    assert not errs, errs
    return res


@pytest.fixture(scope="module", params=[2, 3])
def comms(request):
    cs = schedc.Comm.threads(request.param, timeout=60)
    yield cs
    for c in cs:
        c.close()


def wide(seed, k, dt):
    """Inputs spread over ~40 binades (so some have bits below the grid and are rounded onto it),
    with cancelling pairs across ranks, +-0 and the format's subnormals mixed in."""
    g = torch.Generator().manual_seed(seed)
    span = 10 if dt == torch.float16 else 20  # f16: its whole range
    x = torch.randn(k, generator=g, dtype=torch.float64) * 2.0 ** torch.randint(-span, span, (k,), generator=g)
    x[:4] = torch.tensor([0.0, -0.0, 1.0, -1.0])
    x[4] = torch.finfo(dt).tiny / 4  # a subnormal
    x[5] = 2.0 ** span  # the largest: sets the grid
    # far below the largest, with bits below the grid (f32: more than 38-h binades; bf16: 54-h):
    # each is rounded onto the grid on its own, so these sums differ from the real sum rounded once
    x[20:60] = torch.randn(40, generator=g, dtype=torch.float64) * {torch.float16: 2.0 ** -8,
                                                                    torch.float32: 2.0 ** -24}.get(dt, 2.0 ** -42)
    return x.to(dt)


def same_bits(a, b, what):
    assert a.dtype == b.dtype and a.shape == b.shape, what
    assert torch.equal(a.view(torch.int16 if a.element_size() == 2 else torch.int32),
                       b.view(torch.int16 if b.element_size() == 2 else torch.int32)), what


def plans(n, coll="allreduce", root=0):
    yield "default", None
    yield "canonical", schedc.canonical_plan(n, coll, root)
    if coll == "allreduce":
        yield "ring", schedc.Plan("ring", ranks=n)


@pytest.mark.parametrize("dt", list(DTYPES))
@pytest.mark.parametrize("op", ["sum", "avg"])
def test_allreduce_exact_equals_rational_reference(comms, dt, op):
    n, t = len(comms), DTYPES[dt]
    k = 301
    ins = [wide(100 * n + r, k, t) for r in range(n)]
    ins[1][10:20] = -ins[0][10:20]  # exact cancellation: +0
    for x in ins[2:]:
        x[10:20] = -0.0
    want = exact_sum(ins, t, avg=(op == "avg"))
    for name, plan in plans(n):
        bufs = [x.clone() for x in ins]
        run_ranks(comms, lambda r, c: c.allreduce(bufs[r], op=op, plan=plan, exact=True))
        for r in range(n):
            same_bits(bufs[r], want, (dt, op, name, r))
    assert want[10:20].eq(0).all() and not torch.signbit(want[10:20]).any()


@pytest.mark.parametrize("dt", list(DTYPES))
def test_on_grid_inputs_give_the_real_sum_rounded_once(comms, dt):
    """Every input within 2^(38-h) binades of the largest (f32; more for f16/bf16) lies on the grid:
    nothing is rounded on the way in, so the result is the exact real sum rounded once."""
    n, t = len(comms), DTYPES[dt]
    g = torch.Generator().manual_seed(7 + n)
    ins = [(torch.randn(257, generator=g, dtype=torch.float64) * 2.0 ** torch.randint(-8, 8, (257,), generator=g))
           .to(t) for _ in range(n)]
    want = real_sum_rounded(ins, t)
    same_bits(exact_sum(ins, t), want, "reference")
    bufs = [x.clone() for x in ins]
    run_ranks(comms, lambda r, c: c.allreduce(bufs[r], exact=True))
    for r in range(n):
        same_bits(bufs[r], want, (dt, r))


@pytest.mark.parametrize("dt", list(DTYPES))
def test_reduce_scatter_and_reduce_exact(comms, dt):
    n, t = len(comms), DTYPES[dt]
    k = 64
    ins = [wide(300 + r, n * k, t) for r in range(n)]
    full = exact_sum(ins, t)  # the grid is the whole input's (per call)
    for name, plan in plans(n, "reduce_scatter"):
        outs = [torch.empty(k, dtype=t) for _ in range(n)]
        run_ranks(comms, lambda r, c: c.reduce_scatter(ins[r].clone(), outs[r], plan=plan, exact=True))
        for r in range(n):
            same_bits(outs[r], full[r * k:(r + 1) * k], (dt, "reduce_scatter", name, r))
    root = n - 1
    avg = exact_sum(ins, t, avg=True)
    for name, plan in plans(n, "reduce", root):
        bufs = [x.clone() for x in ins]
        run_ranks(comms, lambda r, c: c.reduce(bufs[r], root=root, op="avg", plan=plan, exact=True))
        same_bits(bufs[root], avg, (dt, "reduce", name))
        for r in range(n - 1):
            same_bits(bufs[r], ins[r], (dt, "reduce untouched", r))


def test_exact_nan_and_infinities(comms):
    """Out of band, the same on every rank: any NaN makes every element NaN; +Inf and -Inf
    together NaN; +Inf alone +Inf everywhere."""
    n = len(comms)

    def run(put):
        bufs = [torch.ones(8) for _ in range(n)]
        put(bufs)
        run_ranks(comms, lambda r, c: c.allreduce(bufs[r], exact=True))
        return bufs
    for b in run(lambda bs: bs[0].__setitem__(3, math.nan)):
        assert b.isnan().all()
    for b in run(lambda bs: (bs[0].__setitem__(1, math.inf), bs[n - 1].__setitem__(5, -math.inf))):
        assert b.isnan().all()
    for b in run(lambda bs: bs[n - 1].__setitem__(2, math.inf)):
        assert torch.equal(b, torch.full((8,), math.inf))


def test_exact_refuses_other_ops_and_dtypes(comms):
    c = comms[0]
    with pytest.raises(ValueError, match="exact=True takes op 'sum' or 'avg', not 'max'"):
        c.allreduce(torch.ones(4), op="max", exact=True)
    for bad in (torch.ones(4, dtype=torch.float64), torch.ones(4, dtype=torch.int32)):
        with pytest.raises(TypeError, match="exact=True takes float32, float16 or bfloat16"):
            c.allreduce(bad, exact=True)
    with pytest.raises(TypeError, match="exact=True"):
        c.reduce_scatter(torch.ones(2 * len(comms), dtype=torch.int64), exact=True)


def test_exact_and_plain_on_different_ranks_is_a_mismatch():
    """A rank in exact mode and one not: SCHEDC_EMISMATCH on both (never a hang)."""
    a, b = schedc.Comm.threads(2, timeout=30)
    bufs = [torch.ones(16), torch.ones(16)]
    res = [None, None]

    def go(r, c):
        try:
            c.allreduce(bufs[r], exact=(r == 0))
        except schedc.Error as e:
            res[r] = e.status
    ts = [threading.Thread(target=go, args=(r, c)) for r, c in enumerate((a, b))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert res == ["SCHEDC_EMISMATCH", "SCHEDC_EMISMATCH"], res
    a.close()
    b.close()


# ---- exact leaves: CanonicalGrads(exact=True) ---------------------------------------------------
L = 12


def net(dtype):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).to(dtype)


def batch(leaf, step, dtype):
    g = torch.Generator().manual_seed(1000 * step + leaf)
    # leaves of very different scales: the grid is set by the largest, the small ones are rounded
    s = 2.0 ** (leaf % 5 * 6 - 12)
    return (torch.randn(4, 5, generator=g) * s).to(dtype), torch.randn(4, 3, generator=g).to(dtype)


def leaf_grad(m, leaf, step, dtype):
    x, y = batch(leaf, step, dtype)
    m.zero_grad(set_to_none=True)
    ((m(x) - y) ** 2).mean().backward()
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()])


def train(n, dtype, op, steps=2):
    """`steps` SGD steps with 12 leaves on n ranks (threads); every rank's weights and first grads."""
    comms = schedc.Comm.threads(n, timeout=60)
    base = net(dtype)  # here: torch.manual_seed is process-wide, not for the rank threads

    def rank(r, c):
        m = copy.deepcopy(base)
        cg = st.CanonicalGrads(m.parameters(), L, c, op=op, exact=True)
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        first = None
        for step in range(steps):
            for leaf in cg.my_leaves:
                x, y = batch(leaf, step, dtype)
                ((m(x) - y) ** 2).mean().backward()
                cg.add(leaf)
            cg.reduce()
            if first is None:
                first = torch.cat([p.grad.reshape(-1) for p in m.parameters()]).clone()
            opt.step()
            opt.zero_grad()
        cg.close()
        return torch.cat([p.detach().reshape(-1) for p in m.parameters()]), first
    res = run_ranks(comms, rank)
    for c in comms:
        c.close()
    return res


@pytest.mark.parametrize("dt,op", [("f32", "avg"), ("f32", "sum"), ("bf16", "avg")])
def test_canonical_grads_exact_same_weights_on_1_2_3_4_6_ranks(dt, op):
    """12 leaves on 1, 2, 3, 4 and 6 ranks (3 and 6: blocks of 4 and 2 leaves that are no subtree
    of a power-of-two tree): every rank of every run the same weights, bit for bit, and the first
    step's gradient equal to the rational reference of the 12 leaf gradients."""
    t = DTYPES[dt]
    m = net(t)
    want = exact_sum([leaf_grad(m, leaf, 0, t) for leaf in range(L)], t, avg=(op == "avg"))
    weights = None
    for n in (1, 2, 3, 4, 6):
        for r, (w, g0) in enumerate(train(n, t, op)):
            same_bits(g0, want, (dt, op, n, r, "first gradient"))
            if weights is None:
                weights = w
            same_bits(w, weights, (dt, op, n, r, "weights"))


def test_canonical_grads_exact_refuses_f64_and_plain_still_needs_power_of_two():
    c = schedc.Comm.threads(1)[0]
    with pytest.raises(TypeError, match="exact=True"):
        st.CanonicalGrads(torch.nn.Linear(2, 2).double().parameters(), 4, c, exact=True)
    c.close()
    cs = schedc.Comm.threads(2, timeout=30)
    with pytest.raises(ValueError, match="or exact=True"):
        st.CanonicalGrads(torch.nn.Linear(2, 2).parameters(), 12, cs[0])  # 6 leaves per rank
    st.CanonicalGrads(torch.nn.Linear(2, 2).parameters(), 12, cs[0], exact=True).close()
    for x in cs:
        x.close()


@pytest.mark.parametrize("dt,L,n", [("f32", 300, 1), ("f32", 1000, 4), ("bf16", 257, 1), ("f16", 5000, 2)])
def test_canonical_grads_exact_avg_many_leaves_correctly_rounded(dt, L, n):
    """avg over more than 256 leaves: the exact sum divided by L and rounded once (exact_ref.py's
    rational quotient), bit for bit. Leaf 0 holds the largest value and one grid unit (the quotient
    of a sum smaller than L: all fraction bits), the other leaves random values and zeros."""
    t = DTYPES[dt]
    k = 6
    g = torch.Generator().manual_seed(L)
    h = (L - 1).bit_length()
    top = 14 if t == torch.float16 else 20
    unit = max(2.0 ** (top - 61 + h), 2.0 ** -24 if t == torch.float16 else 0.0)  # f16: its smallest
    leaves = []
    for j in range(L):
        x = torch.zeros(k, dtype=torch.float64)
        if j == 0:
            x[0], x[1] = 2.0 ** top, unit
        x[2] = torch.randn(1, generator=g, dtype=torch.float64)[0] * 2.0 ** int(torch.randint(-20, top - 1, (1,), generator=g))
        x[3] = -unit * (1 + j % 3)
        x[4] = 2.0 ** (top - 3) if j % 2 else -(2.0 ** (top - 4))
        leaves.append(x.to(t))
    want = exact_sum(leaves, t, avg=True)
    comms = schedc.Comm.threads(n, timeout=120)

    def rank(r, c):
        p = torch.nn.Parameter(torch.zeros(k, dtype=t))
        cg = st.CanonicalGrads([p], L, c, op="avg", exact=True)
        for leaf in cg.my_leaves:
            p.grad = leaves[leaf].clone()
            cg.add(leaf)
        cg.reduce()
        out = p.grad.clone()
        cg.close()
        return out
    res = run_ranks(comms, rank)
    for c in comms:
        c.close()
    for r, got in enumerate(res):
        same_bits(got, want, (dt, L, n, r))
