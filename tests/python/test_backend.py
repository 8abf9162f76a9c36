# test_backend.py — the "schedc" torch.distributed backend in real jobs (ranks launched by hand):
# every op against the plans' trees evaluated here (trees.py), the three ways to initialise,
# subgroups, async order, DDP with 1 and 25 MB buckets and FSDP2's fully_shard giving the same
# weights, a dead rank raising on every live rank, concurrent jobs, repeated launches.
import glob
import os
import re
import socket
import subprocess
import sys

import pytest
import torch

import schedc
from exact_ref import exact_sum
from trees import chunk_range, parse

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(n, args, out, env=None, port=None, worker="pg_worker.py"):
    port = port or free_port()
    return [subprocess.Popen([sys.executable, os.path.join(HERE, worker), args[0], str(out)] + args[1:],
                             env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(n), MASTER_ADDR="127.0.0.1",
                                      MASTER_PORT=str(port), **(env or {})),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in range(n)]


def finish(procs, codes=None):
    outs = [p.communicate(timeout=150)[0] for p in procs]
    for r, p in enumerate(procs):
        want = 0 if codes is None else codes[r]
        assert p.returncode == want, "rank %d exit %s (want %s):\n%s" % (r, p.returncode, want, outs[r][-3000:])
    return outs


def results(out, ranks):
    return [torch.load(os.path.join(out, "rank%d.pt" % r)) for r in ranks]


@pytest.fixture(scope="module", autouse=True)
def no_segments_left():
    before = set(glob.glob("/dev/shm/schedc-u*"))
    yield
    left = set(glob.glob("/dev/shm/schedc-u*")) - before
    assert not left, "segments left behind: %s" % sorted(left)


# ---- independent evaluation of the trees ---------------------------------------------------------
def tree_eval(tree, leaf, f):
    if isinstance(tree, int):
        return leaf(tree)
    return f(tree_eval(tree[0], leaf, f), tree_eval(tree[1], leaf, f))


def by_plan(plan, rank, ins, acc, f=lambda a, b: a + b):
    """What `rank` holds after reducing ins[r] (1-D tensors) by `plan`: each chunk by the tree
    plan.order(chunk, rank) prints, evaluated here in `acc`, pairwise in that order."""
    K = ins[0].numel()
    C = plan.info.nchunks
    out = torch.zeros(K, dtype=acc)
    for c in range(C):
        lo, hi = chunk_range(K, C, c)
        s = plan.order(c, rank)
        if s == "-" or lo == hi:
            continue
        out[lo:hi] = tree_eval(parse(s), lambda r: ins[r][lo:hi].to(acc), f)
    return out


def bits(t):
    return t.contiguous().view(-1).view(torch.uint8).tolist() if t.dtype == torch.bfloat16 else t.numpy().tobytes()


def same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    assert bits(a) == bits(b)


# torch 1.13 (Debian's, python.binding_torch): the collectives on 2 ranks; the rest on torch 2.x
# (python.torch2), where the launches, DDP and FSDP2 are too
@pytest.fixture(scope="module", params=[2, 4] if TORCH2 else [2])
def ops(request, tmp_path_factory):
    n = request.param
    d = tmp_path_factory.mktemp("ops%d" % n)
    # the three ways in: env://, init_method=tcp://, store=
    finish(launch(n, ["ops"], d, env={"SCHEDC_TEST_INIT": {2: "tcp", 4: "store"}[n]}))
    return n, results(d, range(n))


def test_backend_name(ops):
    n, res = ops
    assert all(x["backend"] == "schedc" for x in res)


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "int32", "int64"])
def test_all_reduce_sum_equals_canonical_trees(ops, dt):
    """f16/bf16 accumulate in f32 and round once; ints exact."""
    n, res = ops
    plan = schedc.canonical_plan(n)
    ins = [x["sum_" + dt][0] for x in res]
    acc = torch.float32 if dt in ("float16", "bfloat16") else getattr(torch, dt)
    for r in range(n):
        same_bits(res[r]["sum_" + dt][1], by_plan(plan, r, ins, acc).to(getattr(torch, dt)))


def test_all_reduce_other_ops(ops):
    n, res = ops
    plan = schedc.canonical_plan(n)
    for r in range(n):
        ins = [x["AVG"][0] for x in res]
        same_bits(res[r]["AVG"][1], by_plan(plan, r, ins, torch.float32) / n)  # sum, then one division
        ins = [x["AVG_bf16"][0] for x in res]
        same_bits(res[r]["AVG_bf16"][1], (by_plan(plan, r, ins, torch.float32) / n).to(torch.bfloat16))
        ins = [x["PRODUCT"][0] for x in res]
        same_bits(res[r]["PRODUCT"][1], by_plan(plan, r, ins, torch.float32, lambda a, b: a * b))
        for op, f in (("MIN", torch.minimum), ("MAX", torch.maximum)):
            ins = torch.stack([x[op][0] for x in res])
            same_bits(res[r][op][1], f(ins.min(0).values, ins.min(0).values) if op == "MIN" else ins.max(0).values)


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "bool"])
def test_all_reduce_small_types(ops, dt):
    """Reduced exactly in int64: MIN/MAX exact; SUM wraps as the type's own arithmetic (bool: or)."""
    n, res = ops
    for r in range(n):
        ins = torch.stack([x["MIN_" + dt][0] for x in res])
        assert torch.equal(res[r]["MIN_" + dt][1], ins.min(0).values)
        assert torch.equal(res[r]["MAX_" + dt][1], ins.max(0).values)
        want = ins.to(torch.int64).sum(0)
        want = want != 0 if dt == "bool" else want.to(getattr(torch, dt))
        assert torch.equal(res[r]["SUM_" + dt][1], want)


def test_reduce_equals_root_tree_others_untouched(ops):
    n, res = ops
    root = n - 1
    plan = schedc.canonical_plan(n, "reduce", root)
    ins = [x["reduce"][0] for x in res]
    same_bits(res[root]["reduce"][1], by_plan(plan, root, ins, torch.float32))
    for r in range(n - 1):
        same_bits(res[r]["reduce"][1], ins[r])


def test_reduce_scatter_both_forms(ops):
    n, res = ops
    plan = schedc.canonical_plan(n, "reduce_scatter")
    ins = [x["rs_tensor"][0] for x in res]
    for r in range(n):
        full = by_plan(plan, r, ins, torch.float32)  # rank r's own block is defined by the plan on r
        want = full[r * 129:(r + 1) * 129]
        same_bits(res[r]["rs_tensor"][1], want)
        same_bits(res[r]["rs_list"][1], want)


def test_coalesced_same_bits_as_separate(ops):
    n, res = ops
    plan = schedc.canonical_plan(n)
    for r in range(n):
        for i, got in enumerate(res[r]["coalesced"][1]):
            same_bits(got, by_plan(plan, r, [x["coalesced"][0][i] for x in res], torch.float32))


def test_broadcast_allgather(ops):
    n, res = ops
    for r in range(n):
        same_bits(res[r]["broadcast"][1], res[n - 1]["broadcast"][0])
        cat = torch.cat([x["allgather"][0] for x in res])
        assert torch.equal(res[r]["allgather"][1], cat) and torch.equal(res[r]["allgather"][2], cat)
        want = torch.stack([torch.tensor([q + 1j, -q - 2j], dtype=torch.complex64) for q in range(n)])
        assert torch.equal(res[r]["allgather_complex"], want)


def test_async_in_issue_order(ops):
    n, res = ops
    s = n * (n - 1) / 2
    for r in range(n):
        done, a, fut0 = res[r]["async"]
        assert done == [True, True]  # issued earlier, run earlier: complete when the third is
        for i in range(3):
            assert torch.equal(a[i], torch.full((10,), s + n * i))
        assert torch.equal(fut0, a[2])


def test_gloo_ops_and_subgroup(ops):
    n, res = ops
    for r in range(n):
        assert torch.equal(res[r]["all_to_all"], torch.tensor([10.0 * q + r for q in range(n)]))
        assert "BAND" in res[r]["band"] and "not supported" in res[r]["band"]
        assert "AVG" in res[r]["u8avg"] and "uint8" in res[r]["u8avg"]
    assert torch.equal(res[1]["recv"], torch.full((3,), 7.0))
    members = list(range(0, n, 2))
    plan = schedc.canonical_plan(len(members))
    ins = [res[g]["subgroup"][0] for g in members]
    for i, g in enumerate(members):
        same_bits(res[g]["subgroup"][1], by_plan(plan, i, ins, torch.float32))


@pytest.mark.skipif(not TORCH2, reason="pg_options reach third-party backends on torch 2.x")
def test_group_with_ring_order(ops):
    """Options(order="ring"): the group's all-reduces use the communicator's default plan (no
    canonical plan object), ints still exact."""
    n, res = ops
    for r in range(n):
        order, plan, t = res[r]["ring"]
        assert order == "ring" and plan is None
        assert torch.equal(t, torch.arange(10, dtype=torch.int64) * (n * (n + 1) // 2))


def test_exact_group_equals_rational_reference(ops):
    """A group in exact mode (Options(exact=True), $SCHEDC_TORCH_EXACT=1 at new_group, set_exact):
    every SUM/AVG of f32/f16/bf16 is the exact sum on one grid, rounded once — exact_ref.py's
    rational evaluation, bit for bit; int64 sums as ever (exact integers)."""
    n, res = ops
    for r in range(n):
        for name, dt, avg in (("f32", torch.float32, False), ("f16", torch.float16, False),
                              ("bf16", torch.bfloat16, True)):
            same_bits(res[r]["exact_" + name][1], exact_sum([x["exact_" + name][0] for x in res], dt, avg=avg))
        full = exact_sum([x["exact_rs"][0] for x in res], torch.float32)  # one grid for the whole input
        same_bits(res[r]["exact_rs"][1], full[r * 65:(r + 1) * 65])
        cat = exact_sum([torch.cat(x["exact_coalesced"][0]) for x in res], torch.float32)  # one call, one grid
        same_bits(torch.cat(res[r]["exact_coalesced"][1]), cat)
        assert torch.equal(res[r]["exact_i64"][1], sum(x["exact_i64"][0] for x in res))
        for key in ("exact_env", "exact_set"):
            same_bits(res[r][key][1], exact_sum([x[key][0] for x in res], torch.float32))
        assert res[r]["exact_flags"] == (True, True, False)
    same_bits(res[n - 1]["exact_reduce"][1], exact_sum([x["exact_reduce"][0] for x in res], torch.float32))
    for r in range(n - 1):
        same_bits(res[r]["exact_reduce"][1], res[r]["exact_reduce"][0])


@pytest.mark.skipif(not TORCH2, reason="DDP and FSDP2 over a Python process group need torch 2.x")
def test_ddp_buckets_and_fsdp2_same_weights(tmp_path):
    """DDP with bucket_cap_mb 1, 25 and 0.001 gives the same weights (canonical plans: the bucket
    layout cannot change the bits), on every rank; FSDP2 twice in a row: the same weights on every
    rank and run."""
    finish(launch(2, ["train"], tmp_path))
    res = results(tmp_path, range(2))
    assert res[0]["ddp"] == res[1]["ddp"]
    assert len(set(res[0]["ddp"].values())) == 1, res[0]["ddp"]
    assert res[0]["fsdp"] == res[1]["fsdp"] and res[0]["fsdp"][0] == res[0]["fsdp"][1]


@pytest.mark.skipif(not TORCH2, reason="run by python.torch2")
def test_dead_rank_raises_on_every_live_rank(tmp_path):
    n = 3
    outs = finish(launch(n, ["dead"], tmp_path, env={"SCHEDC_TEST_TIMEOUT": "5"}), codes=[0, 0, 3])
    for x in results(tmp_path, range(n - 1)):
        assert "rank 2" in x["error"], (x["error"], outs)


@pytest.mark.skipif(not TORCH2, reason="run by python.torch2")
def test_missing_rank_times_out_in_torch_words(tmp_path):
    """A rank that never arrives: the others raise within the timeout, naming it, in the words
    PyTorch's suite matches for gloo (test_barrier_timeout_*: " (Timed out|closed|timeout) ")."""
    n = 3
    outs = finish(launch(n, ["late"], tmp_path, env={"SCHEDC_TEST_TIMEOUT": "2"}))
    for x in results(tmp_path, range(n - 1)):
        assert re.search(" (Timed out|closed|timeout) ", x["error"]) and "rank 2" in x["error"], (x["error"], outs)


@pytest.mark.skipif(not TORCH2, reason="run by python.torch2")
def test_concurrent_jobs_and_repeated_launches(tmp_path):
    """Two jobs at once on one host (SCHEDC_TEST_LAUNCHES times in a row): each its own sums, every
    exit clean (exit 0: no abort at exit)."""
    for i in range(int(os.environ.get("SCHEDC_TEST_LAUNCHES", "1"))):  # docs/python.md: 25 by hand
        a, b = tmp_path / ("a%d" % i), tmp_path / ("b%d" % i)
        a.mkdir()
        b.mkdir()
        env = {"TORCHELASTIC_RUN_ID": "none"}
        pa = launch(2, ["value", "1"], a, env)
        pb = launch(2, ["value", "1000"], b, env)
        finish(pa)
        finish(pb)
        for out, v in ((a, 1.0), (b, 1000.0)):
            for x in results(out, range(2)):
                assert torch.equal(x["value"], torch.full((1000,), v * 3))


@pytest.mark.skipif(TORCH2, reason="torch 1.13 only")
def test_ddp_over_schedc_group_refused_on_torch1(tmp_path):
    """1.13's DDP calls the group from C++, which cannot reach a Python group: its constructor
    waited forever. Now an error saying what to use instead."""
    out = finish(launch(1, ["train"], tmp_path), codes=[1])[0]
    assert "DistributedDataParallel over the schedc process group needs torch >= 2.0" in out, out[-2000:]
