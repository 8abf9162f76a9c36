# order_worker.py — one rank of a job on the "schedc" backend for test_order.py: the group's op
# order under callbacks and timing (issue 40), each check's outcome saved for the test to judge.
# Usage: order_worker.py MODE OUTDIR [SEEDS...]; RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT in the env.
# MODE "all": every check below, then the stress seeds; "four": issue_time_order (its trees differ
# from the ring's from 4 ranks on), then the seeds.
# Registering a callback "before the op completes" is made certain, not likely, by holding the GIL
# (a long switch interval) from the issue to the registration: the group's executor, a Python
# thread, cannot take the op meanwhile. "After" is certain by waiting for the op first.
import datetime
import faulthandler
import os
import random
import sys
import threading
import time
import traceback
import zlib

import torch
import torch.distributed as dist

import schedc.torch as st

mode, out = sys.argv[1], sys.argv[2]
_stacks = open(os.path.join(out, "stacks%s.txt" % os.environ["RANK"]), "w")
faulthandler.dump_traceback_later(float(os.environ.get("SCHEDC_TEST_DUMP", "120")), exit=True, file=_stacks)  # a hang
seeds = [int(s) for s in sys.argv[3:]]
torch.set_num_threads(1)
dist.init_process_group("schedc", timeout=datetime.timedelta(seconds=float(os.environ.get("SCHEDC_TEST_TIMEOUT", "60"))))
rank, n = dist.get_rank(), dist.get_world_size()
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
R = dist.ReduceOp
res = {"rank": rank, "n": n}


class held_gil:
    """Hardly any other Python thread runs inside (a long switch interval): a callback registered
    inside on an op issued inside is registered before the op completes — almost always (a torch
    call may release the GIL): the checks that need it say whether it was so (retried)."""

    def __enter__(self):
        self.old = sys.getswitchinterval()
        sys.setswitchinterval(60.0)

    def __exit__(self, *a):
        sys.setswitchinterval(self.old)


def retried(f, tries=6):
    """f() -> (as meant on this rank, result): run until it was as meant on every rank."""
    for _ in range(tries):
        ok, r = f()
        flag = torch.tensor([int(bool(ok))])
        dist.all_reduce(flag, op=R.MIN)
        if flag.item():
            return r
    raise RuntimeError("the timing meant was not had in %d tries" % tries)


SKIP = set(filter(None, os.environ.get("SCHEDC_ORDER_SKIP", "").split(",")))  # by hand: checks that hang old code


def check(name):
    def deco(f):
        if (mode != "all" and name != "issue_time_order") or name in SKIP:
            return f
        t0 = time.monotonic()
        try:
            res[name] = f()
        except Exception as e:  # noqa: B902 — the test reads it
            res[name] = "ERROR %s: %s\n%s" % (type(e).__name__, e, traceback.format_exc())
        dist.barrier()
        res.setdefault("seconds", {})[name] = round(time.monotonic() - t0, 2)
        return f
    return deco


def err(f):
    """The exception f raises, as 'Type: message', or 'no error'."""
    try:
        f()
    except Exception as e:  # noqa: B902
        return "%s: %s" % (type(e).__name__, e)
    return "no error"


def is_main():
    return threading.current_thread() is threading.main_thread()


def checks():
    @check("issue_case")
    def _():
        # issue 40's case: rank 0 registers after w1 completed (the callback runs at once, in the main
        # thread), the others before (it runs later, in another thread); y sums to 3, z to 300 (x n/2)
        def once():
            big = torch.ones(1 << 16)
            y = torch.full((4,), 1.0 + rank)
            z = torch.full((4,), 100.0 + 100 * rank)
            where = []

            def cb(f):
                where.append(is_main())
                dist.all_reduce(z)
                return z
            if rank == 0:
                time.sleep(0.2)  # the others issue and register meanwhile
                w1 = dist.all_reduce(big, async_op=True)
                wy = dist.all_reduce(y, async_op=True)
                w1.wait()
                f = w1.get_future().then(cb)
            else:
                with held_gil():
                    w1 = dist.all_reduce(big, async_op=True)
                    wy = dist.all_reduce(y, async_op=True)
                    f = w1.get_future().then(cb)
            f.wait()
            wy.wait()
            return where == [rank == 0], (y.tolist(), z.tolist(), where)
        return retried(once)

    @check("cb_waits_earlier")
    def _():
        # a callback, run later in another thread, waiting for an op issued before it (gloo completes
        # it; it deadlocked, the group's timeout never firing), then issuing one and waiting for that
        # (PowerSGD's pattern)
        def once():
            y = torch.full((3,), 1.0 + rank)
            q = torch.full((3,), 10.0 * (rank + 1))
            where = []
            with held_gil():
                w1 = dist.all_reduce(torch.ones(1000), async_op=True)
                wy = dist.all_reduce(y, async_op=True)
                f = w1.get_future().then(lambda f: (where.append(is_main()), wy.wait(),
                                                    dist.all_reduce(q, async_op=True).get_future().wait()[0].tolist()))
            got = f.wait()
            return where == [False], (y.tolist(), got[2])
        return retried(once)

    def later(make_cb):
        """A callback, run later, given a box holding an op issued after its registration."""
        def once():
            box, where, early = [], [], []

            def cb(f):
                where.append(is_main())
                if not box:  # it ran before the later op was issued (a torch call let go of the GIL): not the case meant
                    early.append(True)
                    return None
                return make_cb(box)(f)
            with held_gil():
                w1 = dist.all_reduce(torch.ones(8), async_op=True)
                f = w1.get_future().then(cb)
                box.append(dist.all_reduce(torch.ones(8), async_op=True))
            e = err(f.wait)
            box[0].wait()
            return where == [False] and not early, e
        return retried(once)

    @check("later_wait_refused")
    def _():
        # a callback waiting for an op ordered after its own slot: refused at once (it would never end)
        return later(lambda box: lambda f: box[0].wait())

    @check("later_register_refused")
    def _():
        return later(lambda box: lambda f: box[0].get_future().then(lambda g: None))

    @check("other_group_refused")
    def _():
        g = dist.new_group(list(range(n)))
        w = dist.all_reduce(torch.ones(4), async_op=True)
        f = w.get_future().then(lambda f: dist.all_reduce(torch.ones(4), group=g))
        return err(f.wait)

    @check("slot_timeout")
    def _():
        # a callback that never returns (it waits for the main thread, which waits for the group):
        # the group's timeout fires on every rank, naming the callback; nothing hangs
        def once():
            g = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=2))
            ev = threading.Event()
            where = []
            with held_gil():
                w1 = dist.all_reduce(torch.ones(4), group=g, async_op=True)
                f = w1.get_future().then(lambda f: where.append(is_main()) or is_main() or ev.wait(20))
                w2 = dist.all_reduce(torch.ones(4), group=g, async_op=True)
            t0 = time.monotonic()
            e = err(w2.wait)
            took = time.monotonic() - t0
            ev.set()
            f.wait()
            return where == [False], (e, took, err(lambda: dist.all_reduce(torch.ones(4), group=g)))
        return retried(once, tries=3)

    @check("fpenv")
    def _():
        # rank 0's thread flushes subnormals (FTZ/DAZ): the sums' IEEE bits on every rank, plain and
        # exact, and rank 0's setting still on after the calls (synchronous: after the first, they run
        # in the caller's thread). Values move as int32 bits: under DAZ a float conversion reads 0.
        ex = dist.new_group(list(range(n)), pg_options=st.Options(exact=True))
        if rank == 0:
            torch.set_flush_denormal(True)
        mine = {0: 512, 1: 256}.get(rank, 0)  # 2^-140, 2^-141 as f32 bits; the sum 3 * 2^-141 is 768
        outs = []
        for i in range(3):
            a = torch.full((5,), mine, dtype=torch.int32).view(torch.float32)
            dist.all_reduce(a)
            b = torch.full((5,), mine, dtype=torch.int32).view(torch.float32)
            dist.all_reduce(b, group=ex)
            outs.append((a.view(torch.int32).tolist(), b.view(torch.int32).tolist()))
        x = torch.full((1,), 512, dtype=torch.int32).view(torch.float32)
        still = (x * 1.0).view(torch.int32).item() == 0  # rank 0: flushed still
        torch.set_flush_denormal(False)
        return outs, still

    @check("issue_time_order")
    def _():
        # set_order right after issuing: the op keeps the order set when it was issued (canonical)
        g = torch.Generator().manual_seed(700 + rank)
        x = torch.randn(n * 64, generator=g) * 10 ** (torch.rand(n * 64, generator=g) * 6 - 3)
        with held_gil():
            wbig = dist.all_reduce(torch.ones(1 << 18), async_op=True)  # the next ops queue behind it
            o1 = torch.empty(64)
            w1 = dist.reduce_scatter_tensor(o1, x.clone(), async_op=True)
            o2 = [torch.empty(64), torch.empty(64)]
            pg = dist.distributed_c10d._get_default_group()
            opts = dist.ReduceScatterOptions()
            w2 = pg.reduce_scatter_tensor_coalesced(o2, [x.clone(), x.clone() * 3], opts)
            st.set_order(None, "ring")
        for w in (wbig, w1, w2):
            w.wait()
        st.set_order(None, "canonical")
        return x, o1, o2

    @check("abort")
    def _():
        # abort(): the ops not yet running fail at once; the running one by its own timeout
        g = dist.new_group(list(range(n)), timeout=datetime.timedelta(seconds=2))
        if rank != 0:
            return None
        ws = [dist.all_reduce(torch.ones(4), group=g, async_op=True) for _ in range(4)]
        time.sleep(0.3)
        t0 = time.monotonic()
        g.abort()
        took = time.monotonic() - t0
        outs = []
        for w in ws[1:]:
            t1 = time.monotonic()
            outs.append((err(w.wait), time.monotonic() - t1))
        e0 = err(ws[0].wait)
        return took, outs, e0, err(lambda: dist.all_reduce(torch.ones(4), group=g))

    @check("wait_timeout")
    def _():
        if rank == 1:
            time.sleep(1.0)
        w = dist.all_reduce(torch.full((3,), 1.0 + rank), async_op=True)
        t0 = time.monotonic()
        e = err(lambda: w.wait(timeout=datetime.timedelta(seconds=0.3)))
        took = time.monotonic() - t0
        w.wait()
        return e, took, w.result()[0].tolist()

    @check("future_lists")
    def _():
        o = torch.empty(2 * n)
        w = dist.all_gather_into_tensor(o, torch.full((2,), float(rank)), async_op=True)
        a = w.get_future().wait()
        o2 = torch.empty(2)
        w2 = dist.reduce_scatter_tensor(o2, torch.ones(2 * n), async_op=True)
        b = w2.get_future().wait()
        return type(a).__name__, len(a), type(b).__name__, len(b), torch.equal(a[0], o), torch.equal(b[0], o2)

    @check("coalesced_lengths")
    def _():
        pg = dist.distributed_c10d._get_default_group()
        return (err(lambda: pg.allgather_into_tensor_coalesced([torch.empty(2 * n)] * 2, [torch.ones(2)])),
                err(lambda: pg.reduce_scatter_tensor_coalesced([torch.empty(2)], [torch.ones(2 * n)] * 2,
                                                               dist.ReduceScatterOptions())))

    @check("neg_bit")
    def _():
        # a negative view's memory holds -value: MAX of the values is not -MAX of the memory
        x = torch._neg_view(torch.full((3,), 1.0 + rank))  # reads -(1 + rank)
        dist.all_reduce(x, op=R.MAX)
        b = torch._neg_view(torch.full((2,), 5.0 + rank))
        dist.broadcast(b, src=n - 1)
        o = torch.zeros(2 * n)
        dist.all_gather_into_tensor(o, torch._neg_view(torch.full((2,), float(rank + 1))))
        o2 = torch._neg_view(torch.zeros(2 * n))
        dist.all_gather_into_tensor(o2, torch.full((2,), float(rank + 1)))
        return x.tolist(), b.tolist(), o.tolist(), o2.tolist(), x.is_neg()

    @check("batch_p2p")
    def _():
        send = torch.full((3,), float(rank))
        recv = torch.empty(3)
        ops = [dist.P2POp(dist.isend, send, (rank + 1) % n), dist.P2POp(dist.irecv, recv, (rank - 1) % n)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        return recv.tolist()

    if TORCH2:
        @check("gpipe")
        def _():
            from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
            torch.manual_seed(0)
            layers = [torch.nn.Linear(6, 6) for _ in range(n)]
            ref = [torch.nn.Linear(6, 6) for _ in range(n)]
            for a, b in zip(layers, ref):
                b.load_state_dict(a.state_dict())
            x, tgt = torch.randn(4, 6, generator=torch.Generator().manual_seed(1)), torch.zeros(4, 6)

            def loss_fn(o, t):
                return ((o - t) ** 2).sum()
            stage = PipelineStage(layers[rank], rank, n, torch.device("cpu"))
            sched = ScheduleGPipe(stage, n_microbatches=2, loss_fn=loss_fn, scale_grads=False)  # summed, as here
            losses = []
            if rank == 0:
                sched.step(x)
            elif rank == n - 1:
                sched.step(target=tgt, losses=losses)
            else:
                sched.step()
            # the reference: the whole model here, micro-batch by micro-batch (no communication)
            want_losses = []
            for xm, tm in zip(x.chunk(2), tgt.chunk(2)):
                h = xm
                for m in ref:
                    h = m(h)
                ls = loss_fn(h, tm)
                ls.backward()
                want_losses.append(ls.detach())
            got = layers[rank].weight.grad
            return (torch.allclose(got, ref[rank].weight.grad, rtol=1e-5, atol=1e-6),
                    [torch.allclose(a, b) for a, b in zip(losses, want_losses)] if rank == n - 1 else None)

    @check("bind")
    def _():
        # SCHEDC_BIND=core pins the group's executor, never the thread that calls (docs/python.md)
        before = os.sched_getaffinity(0)
        os.environ["SCHEDC_BIND"] = "core"
        try:
            g = dist.new_group(list(range(n)))
        finally:
            del os.environ["SCHEDC_BIND"]
        for _ in range(3):
            dist.all_reduce(torch.ones(4), group=g)  # synchronous: in this thread once the first ran
        ex = [t for t in threading.enumerate() if t.name == "schedc-pg-%d" % id(g)]  # the group's executor
        return (sorted(before), sorted(os.sched_getaffinity(0)),
                sorted(os.sched_getaffinity(ex[0].native_id)) if ex and hasattr(ex[0], "native_id") else None)


# ---- stress: a random program of ops and callbacks, the same on every rank, run with rank-dependent
# timing; every op's result against the sum computed here --------------------------------------------
def stress(seed):
    prog = random.Random(seed)           # the program: the same on every rank
    timing = random.Random(seed * 1000 + rank + 1)  # when things happen: each rank its own
    g = dist.new_group(list(range(n)))
    ops = []   # [(tensor, expected sum)]
    lock = threading.Lock()
    errors = []

    def value(name, r, k):
        # op `name` (its place in the program: the same on every rank) on rank r; sums exact in f32
        v = zlib.crc32(repr(name).encode()) % 1000
        return torch.arange(k, dtype=torch.float32) + 1000.0 * v + 100000.0 * r

    def issue(name, k):
        t = value(name, rank, k)
        with lock:
            ops.append((name, t, sum(value(name, r, k) for r in range(n))))
        return dist.all_reduce(t, group=g, async_op=True)

    def sleep():
        d = timing.random()
        if d < 0.5:
            time.sleep(d * 0.004)

    def make_cb(name, plan, earlier):
        # plan: what the callback does, drawn by the program: issue ops, wait for some
        def cb(f):
            try:
                sleep()
                mine = []
                for j, step in enumerate(plan):
                    if step[0] == "op":
                        mine.append(issue((name, j), step[1]))
                    elif step[0] == "wait_mine" and mine:
                        mine[step[1] % len(mine)].wait()
                    elif step[0] == "wait_earlier" and earlier:
                        earlier[step[1] % len(earlier)].wait()
                    elif step[0] == "sync":
                        dist.all_reduce(torch.zeros(1), group=g)
                    elif step[0] == "nest" and mine:  # a callback registered from a callback
                        inner = make_cb((name, j), [("op", step[1]), ("wait_mine", 0)], [])
                        f2 = mine[-1].get_future().then(inner)  # may run at once, here
                        with lock:
                            futs.append(f2)
                    sleep()
                for w in mine:
                    w.wait()
            except Exception as e:  # noqa: B902
                errors.append(repr(e))
            return None
        return cb

    works, futs = [], []
    for s in range(prog.randint(40, 70)):
        kind = prog.random()
        if kind < 0.45 or not works:
            works.append(issue(("main", s), prog.choice((1, 7, 100, 3000))))
        elif kind < 0.85:
            plan = [prog.choice((("op", prog.choice((1, 5, 400))), ("op", 33), ("wait_mine", prog.randrange(4)),
                                 ("wait_earlier", prog.randrange(50)), ("sync",), ("nest", prog.choice((2, 9)))))
                    for _ in range(prog.randint(0, 4))]
            target = works[prog.randrange(len(works))]
            earlier = list(works)
            cb = make_cb(("cb", s), plan, earlier)
            fut = target.get_future()
            if prog.random() < 0.5:
                futs.append(fut.then(cb))
            else:
                fut.add_done_callback(cb)
        elif kind < 0.93:
            works[prog.randrange(len(works))].wait()
        else:
            dist.all_reduce(torch.zeros(1), group=g)
        sleep()
    for w in works:
        w.wait()
    i = 0
    while i < len(futs):  # a callback may add more
        futs[i].wait()
        i += 1
    dist.barrier(group=g)  # every add_done_callback has run: its ops were before this barrier
    bad = [name for name, t, want in ops if not torch.equal(t, want)]
    return {"ops": len(ops), "bad": bad[:10], "errors": errors[:5]}


checks()
res["stress"] = {}
for sd in ([] if "stress" in SKIP else seeds):
    t0 = time.monotonic()
    res["stress"][sd] = stress(sd)
    res["stress"][sd]["seconds"] = round(time.monotonic() - t0, 2)
    dist.barrier()
torch.save(res, os.path.join(out, "rank%d.pt" % rank))
dist.destroy_process_group()
# the group's threads end with destroy_process_group (torch 1.13 too): none named schedc-pg left
time.sleep(0.2)
left = [t.name for t in threading.enumerate() if t.name.startswith("schedc-pg")]
with open(os.path.join(out, "threads%d.txt" % rank), "w") as f:
    f.write("\n".join(left))
