# test_fixes.py — regressions of schedc.torch found by using it as a new user would: each test
# failed on the code before its fix (named in the test). Single-process: threads communicators.
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

import schedc
import schedc.torch as st


def test_canonical_grads_accepts_grads_zeroed_in_place():
    """torch 1.13's opt.zero_grad() (set_to_none=False) and model.zero_grad() zero .grad in place:
    correct, but add() refused it ("p.grad still holds the previous reduce()'s gradient") because it
    compared tensor identity. The weights must be those of the set_to_none loop, bit for bit; an
    uncleared .grad is still refused (test_torch.py)."""
    def train(clear):
        comm = schedc.Comm.threads(1)[0]
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        cg = st.CanonicalGrads(net.parameters(), 2, comm)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(3):
            for leaf in cg.my_leaves:
                net(torch.full((2, 3), float(leaf + step))).sum().backward()
                cg.add(leaf)
            cg.reduce()
            opt.step()
            clear(opt, net)
        w = torch.cat([p.detach().reshape(-1) for p in net.parameters()])
        cg.close()
        comm.close()
        return w.numpy().tobytes()
    want = train(lambda opt, net: opt.zero_grad(set_to_none=True))
    assert train(lambda opt, net: opt.zero_grad(set_to_none=False)) == want
    assert train(lambda opt, net: net.zero_grad(set_to_none=False)) == want
    assert train(lambda opt, net: [p.grad.zero_() for p in net.parameters()]) == want


def test_canonical_grads_still_refuses_stale_grad_without_backward_reaching_it():
    comm = schedc.Comm.threads(1)[0]
    net = torch.nn.Linear(3, 2)
    cg = st.CanonicalGrads(net.parameters(), 1, comm)
    net(torch.ones(1, 3)).sum().backward()
    cg.add(0)
    cg.reduce()
    with pytest.raises(RuntimeError, match=r"still holds the previous reduce\(\)'s gradient"):
        cg.add(0)  # no zero_grad, no backward: .grad is reduce()'s, untouched
    cg.close()
    comm.close()


def run_script(code, timeout=60):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


def test_hook_thread_completing_a_future_at_exit_exits_cleanly():
    """The DDP hook's daemon thread completes a bucket's future; torch's set_result releases the
    GIL while it runs the callbacks, the main thread (woken by the completion) runs to exit, and
    the thread taking the GIL back during finalisation died inside C++: "terminate called without
    an active exception", exit 134 (a DDP job with the hook on torch 1.13: 3 runs in 8). Here a
    callback that is still running when the main thread exits makes it happen every time."""
    r = run_script("""
        import time, torch, schedc, schedc.torch as st
        comm = schedc.Comm.threads(1)[0]
        state = st.HookState(comm)
        fut = torch.futures.Future()
        fut.add_done_callback(lambda f: time.sleep(0.5))
        state._submit(torch.ones(4), fut)
        while not fut.done():
            time.sleep(0.001)
        print("result", fut.value().tolist(), flush=True)
        # no state.close(), no comm.close(): the process just ends
    """)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "result [1.0, 1.0, 1.0, 1.0]" in r.stdout
    assert "terminate called" not in r.stderr


def test_at_exit_close_waits_for_a_call_in_flight():
    """At exit schedc closed every open communicator while a daemon thread was still inside a C
    call on it (a use after free). Now close() waits for the call (each call holds the Comm's lock)."""
    r = run_script("""
        import threading, time, numpy as np, schedc
        a, b = schedc.Comm.threads(2, timeout=20)
        x, y = np.ones(1 << 16, np.float32), np.full(1 << 16, 2.0, np.float32)
        def late():
            time.sleep(1.0)
            b.allreduce(y)
        threading.Thread(target=lambda: a.allreduce(x), daemon=True).start()
        threading.Thread(target=late, daemon=True).start()
        time.sleep(0.2)
        print("exiting", flush=True)  # rank 0's call is waiting for rank 1 (1 s away)
    """)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])


def test_comm_serialises_calls_from_two_threads():
    """A Comm is shared by the hook's thread and the main thread (CanonicalGrads.reduce,
    comm.allreduce): two calls at once on one communicator entered the library together. Now the
    second waits for the first; results pair up in the order the calls took the lock."""
    c0, c1 = schedc.Comm.threads(2, timeout=10)
    k = 1 << 12
    x, y = torch.full((k,), 1.0), torch.full((k,), 10.0)
    errs = []

    def call(t):
        try:
            c0.allreduce(t)
        except Exception as e:  # noqa: B902
            errs.append(e)
    t1 = threading.Thread(target=call, args=(x,))
    t1.start()
    time.sleep(0.3)  # t1 is inside the call, waiting for rank 1
    t2 = threading.Thread(target=call, args=(y,))
    t2.start()
    time.sleep(0.3)
    a, b = torch.full((k,), 2.0), torch.full((k,), 20.0)
    c1.allreduce(a)
    c1.allreduce(b)
    t1.join(15)
    t2.join(15)
    assert not errs, errs
    assert torch.equal(x, torch.full((k,), 3.0)) and torch.equal(y, torch.full((k,), 30.0))
    c0.close()
    c1.close()


def test_cuda_future_completed_inside_the_stream_block(monkeypatch):
    """The hook's CUDA future was completed after the `torch.cuda.stream(s)` block had ended, so
    set_result recorded its event on the default stream, not on the stream that did the work.
    Checked without a GPU: a stand-in stream context says whether set_result ran inside it."""
    inside = []
    depth = [0]

    class FakeStream:
        def __init__(self, s):
            pass

        def __enter__(self):
            depth[0] += 1

        def __exit__(self, *a):
            depth[0] -= 1

    class FakeFuture:
        def set_result(self, v):
            inside.append(depth[0] > 0)

        def set_exception(self, e):
            raise e

        def done(self):
            return bool(inside)

    monkeypatch.setattr(torch.cuda, "stream", FakeStream)
    state = st.HookState(schedc.Comm.threads(1)[0])
    state._reduce = lambda t: None
    state._queue.put((torch.ones(2), FakeFuture(), "stream"))
    state._queue.put(None)
    state._run()
    assert inside == [True]
    state.comm.close()


def test_abi_check_catches_a_wrong_copy(monkeypatch):
    """The binding hand-copies C tables and structs (issue 29): at import they are compared with
    the library; a wrong copy raises AbiError naming the difference."""
    import ctypes
    from schedc import _lib
    _lib.check_abi()  # the real copies agree
    monkeypatch.setattr(_lib, "OP_NAMES", ["sum", "prod", "max", "min", "avg"])
    with pytest.raises(_lib.AbiError, match=r"value 2 is 'min' in the library, 'max' here"):
        _lib.check_abi()
    monkeypatch.undo()
    monkeypatch.setattr(_lib, "DTYPE_SIZES", [4, 8, 2, 4, 4, 8])
    with pytest.raises(_lib.AbiError, match=r"dtype bf16 has 2 bytes in the library, 4 here"):
        _lib.check_abi()
    monkeypatch.undo()
    monkeypatch.setattr(_lib, "STATUS_NAMES", _lib.STATUS_NAMES[:-1])
    with pytest.raises(_lib.AbiError, match=r"number of statuses"):
        _lib.check_abi()
    monkeypatch.undo()
    fields = [f for f in _lib.PlanInfoC._fields_ if f[0] != "source"]  # a field lost: the rest shift

    class Shifted(ctypes.Structure):
        _fields_ = fields
    monkeypatch.setattr(_lib, "PlanInfoC", Shifted)
    with pytest.raises(_lib.AbiError, match=r"PlanInfoC|sizeof"):
        _lib.check_abi()


TORCH2 = int(torch.__version__.split(".")[0]) >= 2
# one rank of the "schedc" backend (its own port); DDP needs torch 2.x (test_backend.py)
ONE_RANK_DDP = """
    import os, socket, torch, torch.distributed as dist, schedc.torch
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("{backend}", rank=0, world_size=1)
"""


@pytest.mark.skipif(not TORCH2, reason="DDP over a Python process group needs torch 2.x")
def test_ddp_create_graph_over_schedc_group():
    """PyTorch's test_ddp_create_graph: DDP, a 0-dim parameter, backward(create_graph=True), 1 rank.
    The bucket then requires grad; Comm refuses such a tensor, the op failed, and its future held the
    exception as a value, which DDP's reducer parsed as the tensor list: SIGSEGV (exit -11). Now the
    backend writes the data untracked, as gloo does: the grads are gloo's, step by step."""
    def grads(backend):
        r = run_script(textwrap.dedent(ONE_RANK_DDP.format(backend=backend)) + textwrap.dedent("""
            class M(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.p = torch.nn.Parameter(torch.tensor(1.5))
                def forward(self):
                    return self.p.pow(3)
            m = torch.nn.parallel.DistributedDataParallel(M())
            for i in range(3):
                m().backward(create_graph=True)   # no zero_grad: the grads accumulate
                print("grad", repr(m.module.p.grad.item()), m.module.p.grad.requires_grad, flush=True)
            dist.destroy_process_group()
        """), timeout=120)
        assert r.returncode == 0, (backend, r.returncode, r.stderr[-2000:])
        return [ln for ln in r.stdout.splitlines() if ln.startswith("grad ")]
    got = grads("schedc")
    assert got == ["grad %r True" % (6.75 * k) for k in (1, 2, 3)], got  # d/dp p^3 = 3p^2 = 6.75
    assert got == grads("gloo")


@pytest.mark.skipif(not TORCH2, reason="DDP over a Python process group needs torch 2.x")
def test_ddp_backend_failure_raises_from_backward():
    """A failure of the backend's all-reduce under DDP: the Work's future held the exception as its
    value (a Python future's set_exception), DDP's C++ reducer read it as the output tensors and
    crashed (SIGSEGV). The future DDP gets now fails in C++: backward() raises the message."""
    r = run_script(textwrap.dedent(ONE_RANK_DDP.format(backend="schedc")) + textwrap.dedent("""
        m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 2))
        pg = dist.distributed_c10d._get_default_group()
        def boom(*a, **k):
            raise RuntimeError("injected failure in the all-reduce")
        pg.comm.allreduce = boom
        try:
            m(torch.ones(1, 3)).sum().backward()
            print("no error", flush=True)
        except RuntimeError as e:
            print("raised", "injected failure in the all-reduce" in str(e), flush=True)
        w = dist.all_reduce(torch.ones(2), async_op=True)   # Python's wait(): the original exception
        try:
            w.wait()
        except RuntimeError as e:
            print("wait raised", str(e), flush=True)
        dist.destroy_process_group()
    """), timeout=120)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "raised True" in r.stdout and "wait raised injected failure in the all-reduce" in r.stdout, r.stdout


@pytest.mark.skipif(not TORCH2, reason="DDP over a Python process group needs torch 2.x")
def test_op_issued_and_waited_by_a_callback_does_not_deadlock():
    """Completing an op's future runs its callbacks in the group's worker thread; PowerSGD's
    callbacks issue an all-reduce and wait for it. Queued behind the op whose callback waits, it
    never ran: DDP with powerSGD_hook hung forever (2 ranks, the first compressed step). Now an op
    issued from inside a running op runs at once, nested. Here the first op is slowed so the
    callback surely runs in the worker; its ops (async + wait, and synchronous) complete."""
    r = run_script(textwrap.dedent(ONE_RANK_DDP.format(backend="schedc")) + textwrap.dedent("""
        import time
        pg = dist.distributed_c10d._get_default_group()
        orig = pg.comm.allreduce
        def slow(*a, **k):
            time.sleep(0.3)
            return orig(*a, **k)
        pg.comm.allreduce = slow
        a, b, c = torch.ones(4), torch.full((4,), 2.0), torch.full((4,), 3.0)
        w = dist.all_reduce(a, async_op=True)
        def cb(f):
            dist.all_reduce(b, async_op=True).get_future().wait()  # PowerSGD's pattern
            dist.all_reduce(c)  # synchronous
            return threading.current_thread().name
        print("callback ran in", w.get_future().then(cb).wait(), flush=True)
        pg.comm.allreduce = orig
        m = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))
        from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
        st = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=1, start_powerSGD_iter=2,
                                min_compression_rate=0.5)
        m.register_comm_hook(st, psgd.powerSGD_hook)
        for i in range(4):
            m(torch.ones(2, 8)).sum().backward()
        print("powersgd steps done", flush=True)
        dist.destroy_process_group()
    """).replace("import time", "import threading, time"), timeout=90)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert "callback ran in schedc-pg" in r.stdout and "powersgd steps done" in r.stdout, r.stdout
