# test_order.py — the schedc backend's op order under callbacks and timing, and the rest of issue
# 40's torch-backend items (order_worker.py runs them in real jobs): callbacks' ops paired alike on
# every rank as gloo pairs them, callbacks waiting without deadlock, the impossible refused on every
# rank, the calling thread's FTZ/DAZ not changing bits, gloo's behaviour of set_order, abort(),
# wait(timeout), batch_isend_irecv and pipelining, future values, negative views, SCHEDC_BIND; and a
# seeded stress of ops issued from callbacks at random times, every result against sums made here.
# Two jobs: 2 ranks (every check, stress seeds), and 4 ranks on torch 2.x / 3 on 1.13 (stress, the
# issue-time order, whose trees tell canonical from ring from 4 ranks on).
import os
import re

import pytest
import torch

import schedc
from test_backend import by_plan, finish, launch, results, same_bits

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
SEEDS2 = [1, 2, 3, 4, 5, 6]
SEEDSN = [11, 12, 13, 14]


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    a, b = tmp_path_factory.mktemp("order2"), tmp_path_factory.mktemp("orderN")
    nb = 4 if TORCH2 else 3
    env = {"SCHEDC_TEST_TIMEOUT": "60"}
    pa = launch(2, ["all"] + [str(s) for s in SEEDS2], a, env=env, worker="order_worker.py")
    pb = launch(nb, ["four"] + [str(s) for s in SEEDSN], b, env=env, worker="order_worker.py")
    outs = finish(pa) + finish(pb)
    ra, rb = results(a, range(2)), results(b, range(nb))
    left = [open(os.path.join(d, "threads%d.txt" % r)).read() for d, m in ((a, 2), (b, nb)) for r in range(m)]
    return ra, rb, left, outs


def val(res, name):
    v = res[name]
    assert not (isinstance(v, str) and v.startswith("ERROR")), v
    return v


def test_callback_ops_pair_as_gloo_whatever_the_timing(jobs):
    """Issue 40's case: w1, then y, then w1's callback issues z; rank 0 registers it after w1 is done
    (it runs at once, in the main thread), rank 1 before (it runs later, in another thread). Before:
    rank 0 y=201 z=102, rank 1 y=102 z=201 (the callback's op ran at once on one rank, queued on the
    other). Now gloo's: y=3 and z=300 on both."""
    ra = jobs[0]
    for r in range(2):
        y, z, where = val(ra[r], "issue_case")
        assert y == [3.0] * 4 and z == [300.0] * 4, (r, y, z)
        assert where == [r == 0], where  # the two timings were the ones meant


def test_callback_waits_for_earlier_op_and_its_own(jobs):
    """A callback waiting for an op issued before it (queued behind the op whose completion runs
    the callback, on the same thread: a deadlock the group's timeout never ended), and issuing one
    and waiting for it: gloo completes both; so does schedc now."""
    for r in range(2):
        y, q = val(jobs[0][r], "cb_waits_earlier")
        assert y == [3.0] * 3 and q == [30.0] * 3


def test_impossible_orders_refused_on_every_rank(jobs):
    for r in range(2):
        res = jobs[0][r]
        assert re.search(r"OrderError: .*waits for op #\d+ \(allreduce\), which is ordered after the callback's own",
                         val(res, "later_wait_refused")), res["later_wait_refused"]
        assert re.search(r"OrderError: .*on the future of op #\d+ \(allreduce\), which is ordered after it",
                         val(res, "later_register_refused")), res["later_register_refused"]
        assert "OrderError: " in val(res, "other_group_refused") and "another group's op" in res["other_group_refused"]


def test_callback_that_never_returns_times_out(jobs):
    """The group's timeout (2 s) fires at a callback that waits for the main thread, which waits
    for the group: a timeout in torch's words on every rank, the group failed after it."""
    for r in range(2):
        e, took, after = val(jobs[0][r], "slot_timeout")
        assert " Timed out: " in e and "the callback registered on op #" in e, e
        assert 1.5 < took < 20, took
        assert " Timed out: " in after, after


def test_flush_denormal_on_the_caller_changes_no_bits(jobs):
    """torch.set_flush_denormal(True) on rank 0 (FTZ/DAZ: per thread): 2^-140 + 2^-141 = 3 * 2^-141
    (f32 bits 768) on both ranks, plain and exact, three calls each (synchronous: run in rank 0's
    thread after the first); rank 0 still flushes afterwards. Before: flushed on some ranks."""
    for r in range(2):
        outs, still = val(jobs[0][r], "fpenv")
        for a, b in outs:
            assert a == [768] * 5 and b == [768] * 5, (r, outs)
        assert still is (True if r == 0 else False)


def test_set_order_read_when_issued(jobs):
    """reduce_scatter_tensor and reduce_scatter_tensor_coalesced issued, then set_order(ring) before
    they run: they keep the canonical plan of their issue (they read it when run: the ring's bits)."""
    rb = jobs[1]
    n = len(rb)
    canon = schedc.canonical_plan(n, "reduce_scatter")
    ring = schedc.Plan("ring", ranks=n, defines={"collective": "reduce_scatter"})
    xs = [val(x, "issue_time_order")[0] for x in rb]
    differs = False
    for r in range(n):
        x, o1, o2 = val(rb[r], "issue_time_order")
        k = o1.numel()
        for got, scale in ((o1, 1.0), (o2[0], 1.0), (o2[1], 3.0)):
            ins = [t * scale for t in xs]
            same_bits(got, by_plan(canon, r, ins, torch.float32)[r * k:(r + 1) * k])
            differs |= not torch.equal(got, by_plan(ring, r, ins, torch.float32)[r * k:(r + 1) * k])
    assert differs or n < 4  # the data tell the two trees apart


def test_abort_fails_queued_ops_at_once(jobs):
    """abort() with 4 ops queued and the peer absent: returns at once, the 3 not running raise at
    once, the running one by the group's 2 s timeout, later ops at once. Before: abort() ran the
    queued ops out (each to its timeout)."""
    took, outs, e0, after = val(jobs[0][0], "abort")
    assert took < 1.0, took
    for e, t in outs:
        assert "aborted" in e and t < 1.0, outs
    assert " Timed out " in e0 or "Timed out" in e0, e0
    assert "aborted" in after, after


def test_wait_timeout_raises_as_gloo(jobs):
    """Work.wait(timeout=0.3 s) on an op whose peer comes 1 s later: gloo's "Operation timed out!"
    after 0.3 s; the op goes on, and wait() then gives its result. Before: the timeout was ignored."""
    e, took, v = val(jobs[0][0], "wait_timeout")
    assert e.startswith("RuntimeError: Operation timed out!"), e
    assert took < 1.2, took
    assert v == [3.0] * 3
    assert val(jobs[0][1], "wait_timeout")[2] == [3.0] * 3


def test_futures_hold_lists_coalesced_lengths_refused(jobs):
    for r in range(2):
        assert val(jobs[0][r], "future_lists") == ("list", 1, "list", 1, True, True)
        ag, rs = val(jobs[0][r], "coalesced_lengths")
        assert "same length" in ag and "same length" in rs, (ag, rs)


def test_negative_views_honoured(jobs):
    """A negative view's memory holds -value: MAX over the views is -1 (of the memory, -2), a
    gathered negative input reads negated, a gathered-into negative output reads the values."""
    for r in range(2):
        x, b, o, o2, neg = val(jobs[0][r], "neg_bit")
        assert x == [-1.0] * 3 and neg
        assert b == [-6.0] * 2
        assert o == [-1.0, -1.0, -2.0, -2.0] and o2 == [1.0, 1.0, 2.0, 2.0]


def test_batch_isend_irecv_and_pipelining(jobs):
    """batch_isend_irecv on the schedc group ("No backend type associated with device type cpu"
    before), and torch.distributed.pipelining's ScheduleGPipe over it (torch 2.x): the grads and
    losses of the same model run here micro-batch by micro-batch."""
    for r in range(2):
        assert val(jobs[0][r], "batch_p2p") == [float((r - 1) % 2)] * 3
    if TORCH2:
        assert val(jobs[0][0], "gpipe") == (True, None)
        assert val(jobs[0][1], "gpipe") == (True, [True, True])


def test_bind_core_pins_the_executor_not_the_caller(jobs):
    """SCHEDC_BIND=core: the group's executor thread is pinned, the thread making synchronous calls
    never is (torch 2.x ran the first synchronous op in the caller's thread: it got pinned)."""
    for r in range(2):
        before, after, ex = val(jobs[0][r], "bind")
        assert after == before, (before, after)
        if len(before) >= 2:
            assert ex is not None and len(ex) == 1, ex


def test_threads_end_at_destroy_process_group(jobs):
    """No schedc-pg thread is left after destroy_process_group() (torch 1.13 did not stop them)."""
    assert jobs[2] == [""] * len(jobs[2]), jobs[2]


def test_stress_callbacks_at_random_times(jobs):
    """A random program (seeded: the same on every rank) of async ops, callbacks registered on
    their futures (then / add_done_callback), callbacks issuing ops, waiting for earlier ones and
    their own, registering callbacks of their own, with each rank's own random delays: every op's
    result is the sum of the ranks' inputs computed here (exact in f32), no callback failed."""
    for res_list, seeds in ((jobs[0], SEEDS2), (jobs[1], SEEDSN)):
        for res in res_list:
            for sd in seeds:
                s = res["stress"][sd]
                assert s["ops"] > 20 and s["bad"] == [] and s["errors"] == [], (res["n"], res["rank"], sd, s)
