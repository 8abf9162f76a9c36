# schedc.torch — schedc inside a torch.distributed job: a communicator bootstrapped through the
# process group (a random job id from rank 0, never from the environment), a DDP communication
# hook reducing buckets in a canonical order, and canonical micro-batch gradient accumulation.
"""PyTorch integration: the ``"schedc"`` torch.distributed backend (registered by importing this
module: ``dist.init_process_group("schedc")``), ``init_comm``, ``HookState`` + ``allreduce_hook``
for ``DistributedDataParallel.register_comm_hook``, and ``CanonicalGrads`` (docs/python.md)."""
import atexit
import ctypes
import os
import queue
import threading
import weakref
from typing import Any, Iterable, List, Optional

import torch
import torch.distributed as dist

from . import Comm, Plan, canonical_plan, unique_id
from .errors import _check
from .names import _parse_op
from ._backend import _MPI_LAUNCHER_VARS, Options, ProcessGroupSchedc, _host_id, register, set_exact, set_order
from ._lib import lib
from .compress import QuantizedState, TopKState, quantized_hook, topk_hook
from .checkpoint import load as load_checkpoint, save as save_checkpoint  # docs/recovery.md

__all__ = ["init_comm", "HookState", "allreduce_hook", "CanonicalGrads", "ProcessGroupSchedc", "Options",
           "set_order", "set_exact", "save_checkpoint", "load_checkpoint",
           "QuantizedState", "quantized_hook", "TopKState", "topk_hook"]

register()  # dist.init_process_group("schedc")




def init_comm(group: Optional[Any] = None, timeout: Optional[float] = None,
              backend: Optional[str] = None) -> Comm:
    """A schedc communicator over the ranks of ``group`` (default: the default process group),
    which must already be initialised (``torch.distributed.init_process_group("gloo")``).

    Collective over the group; every rank raises the same RuntimeError when it cannot be made.
    ``backend``: None (default) picks "shm" when every rank is on one host, else "mpi" when an MPI
    launcher started every rank and the group is the whole world, else "net".

    - "shm": processes on one host. The group's rank 0 draws a fresh 128-bit id
      (schedc_unique_id) and broadcasts it over the group, so two concurrent jobs on one host
      never share shared-memory segments, whatever TORCHELASTIC_RUN_ID or MASTER_PORT say.
    - "mpi": any number of hosts, for a job started by an MPI launcher (``mpirun``, ``srun``)
      whose torch ranks are its MPI ranks (RANK=$OMPI_COMM_WORLD_RANK; docs/python.md): the
      communicator is MPI_COMM_WORLD's (Comm.mpi), so ``group`` must be the whole world, and
      the library must have been built with MPI. MPI keeps jobs apart by itself: no id needed.
    - "net": any number of hosts over UCX, no MPI launcher (torchrun, srun): the ranks' UCX
      addresses are exchanged over the group itself (all_gather_object; Comm.net), so any group
      works. Needs a library built with UCX."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("schedc.torch.init_comm: call torch.distributed.init_process_group('gloo') first")
    rank = dist.get_rank(group)
    n = dist.get_world_size(group)
    if rank < 0:  # torch's collectives return at once on a non-member: every step below would misread that
        raise ValueError("schedc.torch.init_comm: this process (global rank %d) is not a member of `group`; only "
                         "the group's ranks call init_comm(group=...)" % dist.get_rank())
    src = 0
    if group is not None:
        # the public name where it exists (torch >= 2.0); 1.13's private one warns that it is deprecated
        get = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank  # type: ignore[attr-defined]
        src = get(group, 0)
    under_mpi = any(v in os.environ for v in _MPI_LAUNCHER_VARS)
    facts: List[Any] = [None] * n
    # backend goes through the gather too, checked after it: a rank that raised alone (a bad value),
    # or went to MPI's init while the others went to the shm id's broadcast, would leave them waiting
    dist.all_gather_object(facts, (_host_id(), under_mpi, backend if backend is None or isinstance(backend, str)
                                   else repr(backend)), group=group)
    hosts = set(f[0] for f in facts)
    asked = [f[2] for f in facts]
    bad = [(r, b) for r, b in enumerate(asked) if b not in (None, "shm", "mpi", "net")]
    if bad:
        raise ValueError("schedc.torch.init_comm: backend must be None (automatic), 'shm', 'mpi' or 'net', not %s"
                         % ", ".join("%r (rank %d)" % (b, r) for r, b in bad[:4]))
    whole = n == dist.get_world_size()
    auto = "shm" if len(hosts) == 1 else "mpi" if all(f[1] for f in facts) and whole else "net"
    if len(set(b or auto for b in asked)) > 1:
        raise RuntimeError("schedc.torch.init_comm: the ranks ask for different backends (%s; None is %r here): "
                           "pass the same backend= on every rank"
                           % (", ".join("rank %d: %r" % (r, b) for r, b in enumerate(asked) if r < 8), auto))
    backend = backend or auto
    if backend == "mpi":
        return _init_mpi(group, rank, n, timeout, all(f[1] for f in facts), len(hosts))
    if backend == "net":
        return _init_net(group, rank, n, timeout)
    box: List[Any] = [unique_id().hex() if rank == 0 else None]
    dist.broadcast_object_list(box, src=src, group=group)
    if len(hosts) != 1:
        raise RuntimeError("schedc.torch.init_comm: the ranks span %d hosts; the shm backend needs one host "
                           "(across hosts: backend='net', or 'mpi' under an MPI launcher)" % len(hosts))
    return Comm.shm(rank, n, uid=bytes.fromhex(box[0]), timeout=timeout)


def _init_net(group: Optional[Any], rank: int, n: int, timeout: Optional[float]) -> Comm:
    """init_comm's "net" backend: the bootstrap's allgathers over the group itself. A rank whose
    init fails still answers every round it reaches, so the others fail with it (the library
    names the rank), not wait."""
    def allgather(mine: bytes) -> List[bytes]:
        parts: List[Any] = [None] * n
        dist.all_gather_object(parts, mine, group=group)
        return parts
    try:
        return Comm.net(rank, n, allgather=allgather, timeout=timeout)
    except Exception as e:
        raise RuntimeError("schedc.torch.init_comm (net): %s" % e) from e


def _init_mpi(group: Optional[Any], rank: int, n: int, timeout: Optional[float], under_mpi: bool,
              nhosts: int) -> Comm:
    """init_comm's "mpi" backend. Every precondition is agreed over the torch group first, so
    that no rank enters MPI's collective init alone (it would wait there for the others)."""
    why = ""
    if not under_mpi:
        why = ("the mpi backend needs every rank started by an MPI launcher, and on some rank none of %s is "
               "set: launch the job with mpirun or srun%s" % (", ".join(_MPI_LAUNCHER_VARS),
                                                              " (the ranks span %d hosts, which shm cannot serve)" % nhosts
                                                              if nhosts > 1 else ", or use backend='shm'"))
    elif n != dist.get_world_size():
        why = "the mpi backend covers the whole world (MPI_COMM_WORLD): call it with group=None"
    if why:
        raise RuntimeError("schedc.torch.init_comm: " + why)
    comm: Optional[Comm] = None
    err = ""
    try:
        comm = Comm.mpi(timeout=timeout)
        if comm.rank != rank or comm.nranks != n:
            err = ("torch rank %d of %d is MPI rank %d of %d: start the job so that RANK and WORLD_SIZE are the "
                   "MPI launcher's (RANK=$OMPI_COMM_WORLD_RANK, WORLD_SIZE=$OMPI_COMM_WORLD_SIZE)"
                   % (rank, n, comm.rank, comm.nranks))
    except Exception as e:  # every rank hears of any rank's failure below
        err = str(e)
    errs: List[Any] = [None] * n
    dist.all_gather_object(errs, err, group=group)
    bad = [(r, e) for r, e in enumerate(errs) if e]
    if bad:
        if comm is not None:
            comm.close()
        raise RuntimeError("schedc.torch.init_comm (mpi): " + "; ".join("rank %d: %s" % (r, e) for r, e in bad[:4]))
    assert comm is not None
    return comm


class HookState:
    """State for ``allreduce_hook``: the communicator, the plan (default: a canonical allreduce
    plan for the communicator's rank count, so DDP's bucket layout cannot change the bits;
    ``order="ring"`` picks the built-in ring instead), the op: "avg" (sum, then one division
    by the rank count) or "sum", and ``overlap``: True (default) reduces buckets on one background
    thread, in the order DDP hands them over, while backward goes on; False reduces each bucket
    inside the hook. The bits are the same either way. ``close()`` stops the thread (it is a
    daemon thread, so a process that never calls it still exits). CUDA buckets are reduced by the
    cuda backend on the stream backward produced them on (Comm: device buffers), and the future
    carries their device, so DDP's use of the result waits for that stream."""

    def __init__(self, comm: Comm, plan: Optional[Plan] = None, order: Optional[str] = None,
                 op: str = "avg", overlap: bool = True) -> None:
        if op not in ("avg", "sum"):
            raise ValueError("schedc.torch.HookState: op must be 'avg' or 'sum', not %r" % (op,))
        if order not in (None, "canonical", "ring"):
            raise ValueError("schedc.torch.HookState: order must be 'canonical' or 'ring', not %r" % (order,))
        if plan is not None and order is not None:
            raise ValueError("schedc.torch.HookState: give plan= or order=, not both")
        self.comm = comm
        self.op = op
        if plan is None and order != "ring":
            plan = canonical_plan(comm.nranks)
        self.plan = plan
        self.calls = 0
        self.overlap = bool(overlap)
        self._queue: "queue.Queue[Any]" = queue.Queue()
        self._worker: Optional[threading.Thread] = None
        self._lock = threading.Lock()
        _hook_states.add(self)

    def _reduce(self, t: torch.Tensor) -> None:
        self.comm.allreduce(t, op=self.op, plan=self.plan)
        self.calls += 1

    def _run(self) -> None:
        # One thread, one FIFO: buckets are reduced one at a time in the order the hooks were
        # called, which DDP keeps the same on every rank (a collective's calls must match). The C
        # call releases the GIL (ctypes), so backward and the next hooks go on meanwhile. After a
        # failure the communicator is broken: every later bucket fails too, each with its error.
        while True:
            item = self._queue.get()
            if item is None:
                return
            t, fut, stream = item
            try:
                if stream is not None:  # a CUDA bucket: enqueue behind the work that produced it
                    with torch.cuda.stream(stream):
                        self._reduce(t)
                        # inside the block: set_result records the future's CUDA event on the
                        # current stream, which must be the one the reduction was enqueued on
                        fut.set_result(t)
                else:
                    self._reduce(t)
                    fut.set_result(t)
            except BaseException as e:  # handed to DDP through the future, which raises it in backward
                if not fut.done():
                    fut.set_exception(e)
            del item, t, fut, stream

    def _submit(self, t: torch.Tensor, fut: "torch.futures.Future[torch.Tensor]") -> None:
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="schedc-ddp-hook", daemon=True)
                self._worker.start()
        # the stream backward produced the bucket on, current in the hook's thread, not this one's
        self._queue.put((t, fut, torch.cuda.current_stream(t.device) if t.is_cuda else None))

    def close(self, timeout: Optional[float] = None) -> None:
        """Finish the buckets already handed over, then stop the background thread."""
        with self._lock:
            w, self._worker = self._worker, None
        if w is not None:
            self._queue.put(None)
            w.join(timeout)


_hook_states: "weakref.WeakSet[HookState]" = weakref.WeakSet()


@atexit.register
def _close_hook_states() -> None:
    # Stop every hook's thread before the interpreter finalises. A daemon thread completing a
    # future releases the GIL inside torch's C++ (markCompleted) while DDP's main thread, woken by
    # it, runs to exit; taking the GIL back during finalisation kills the thread inside a C++
    # destructor: "terminate called without an active exception", exit 134 (torch 1.13, 3 runs
    # in 8). Registered after schedc's at-exit close of the communicators, so it runs before it.
    for s in list(_hook_states):
        try:
            s.close(timeout=30.0)
        except Exception:
            pass


def _bucket_tensor(bucket: dist.GradBucket) -> torch.Tensor:
    # GradBucket.buffer() since torch 1.10; get_tensor() before.
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


# DDP's register_comm_hook inspects these annotations: they must be the real GradBucket and
# Future[Tensor] objects (hence no `from __future__ import annotations` in this module).
def allreduce_hook(state: HookState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: ``ddp.register_comm_hook(HookState(comm), allreduce_hook)``.
    Reduces the bucket in place with schedc (DDP does not pre-divide when a hook is set) and
    returns a Future holding it: completed by the background thread (``state.overlap``, the
    default) or already completed."""
    t = _bucket_tensor(bucket)
    # CUDA: the result is stream-ordered; a future that knows the device makes its consumers wait
    # for the stream the reduction was enqueued on (set_result records it)
    fut: torch.futures.Future[torch.Tensor] = (torch.futures.Future(devices=[t.device]) if t.is_cuda
                                               else torch.futures.Future())
    if state.overlap:
        state._submit(t, fut)
        return fut
    state._reduce(t)
    fut.set_result(t)
    return fut


_ACC_DTYPES = {torch.float32: 0, torch.float64: 1}
_EXACT_DTYPES = {torch.float32: 0, torch.float16: 2, torch.bfloat16: 3}  # exact leaves


class CanonicalGrads:
    """Canonical gradient accumulation over ``leaves`` fixed-size micro-batches per step, spread over
    the communicator's ranks: rank r runs micro-batches r*m .. r*m+m-1 (m = leaves / nranks, a power
    of two), calling ``add(leaf)`` after each backward (it takes every ``p.grad`` into schedc's
    canonical accumulator — schedc_accumulate — and clears it); ``reduce()`` then writes into
    every ``p.grad`` the canonical sum of all leaves (``op="avg"``: divided once by ``leaves``),
    reduced across ranks by a canonical plan: the same bits for any rank count dividing ``leaves``.
    Parameters must be float32 or float64 (all the same); the accumulation is in their type. CUDA
    parameters work too: each leaf's gradients are copied to the host and accumulated there, the
    sum reduced there and copied back (the same bits as on the CPU; a host copy per leaf).

    ``exact=True``: exact leaves (docs/determinism.md "Exact mode"): every leaf of every rank is
    put on one fixed-point grid and the integers summed (schedc_accum_allreduce), so the result is
    the same bits for *every* rank count dividing ``leaves`` (12 leaves: 1, 2, 3, 4, 6, 12 ranks),
    with no power-of-two condition — and for any rank count up to ``leaves`` (rank r runs leaves
    r*leaves//n .. (r+1)*leaves//n - 1: 12 on 5 ranks are 3, 3, 2, 2, 2), which lets a shrunk job
    go on with the same weights — and for any ``plan``; ``op="avg"`` divides the exact sum by
    ``leaves`` and rounds once. Parameters float32, float16 or bfloat16. Each rank keeps its leaves
    until ``reduce()`` (count x leaves per rank of memory): the grid needs every leaf first."""

    def __init__(self, params: Iterable[torch.nn.Parameter], leaves: int, comm: Comm, op: str = "avg",
                 plan: Optional[Plan] = None, exact: bool = False) -> None:
        self.params = [p for p in params if p.requires_grad]
        if not self.params:
            raise ValueError("schedc.torch.CanonicalGrads: no parameters that require grad")
        dts = {p.dtype for p in self.params}
        table = _EXACT_DTYPES if exact else _ACC_DTYPES
        if len(dts) != 1 or next(iter(dts)) not in table:
            raise TypeError("schedc.torch.CanonicalGrads: parameters must all be %s, got %s"
                            % ("float32, all float16 or all bfloat16 with exact=True" if exact else
                               "float32 or all float64", sorted(str(d) for d in dts)))
        if op not in ("avg", "sum"):
            raise ValueError("schedc.torch.CanonicalGrads: op must be 'avg' or 'sum', not %r" % (op,))
        n, r = comm.nranks, comm.rank
        if leaves <= 0 or (leaves < n if exact else leaves % n):
            raise ValueError("schedc.torch.CanonicalGrads: %d leaves do not split %s over %d ranks"
                             % (leaves, "at least one each" if exact else "evenly", n))
        # exact: blocks by index, of any sizes (12 leaves on 5 ranks: 3, 3, 2, 2, 2)
        first, m = (r * leaves // n, (r + 1) * leaves // n - r * leaves // n) if exact else (r * (leaves // n), leaves // n)
        if not exact and n > 1 and m & (m - 1):
            raise ValueError("schedc.torch.CanonicalGrads: each rank's %d leaves must be a power of two for its "
                             "block to be a subtree of the canonical tree (leaves = nranks * 2^k; or exact=True, "
                             "which takes any split)" % m)
        self.dtype = next(iter(dts))
        self.exact = bool(exact)
        self.comm, self.op, self.leaves, self.first, self.per_rank = comm, op, leaves, first, m
        self.count = sum(p.numel() for p in self.params)
        # exact: any plan gives the same bits (None: the communicator's default plan)
        self.plan = plan if plan is not None or exact else canonical_plan(n)
        self._flat = torch.empty(self.count, dtype=self.dtype)
        self._acc = ctypes.c_void_p()
        # exact: the op is the exact one (avg: the exact sum divided by `leaves`, rounded once)
        acc_op = (_parse_op(op + "_exact") if exact else 0)
        _check(lib.schedc_accum_create(self.count, table[self.dtype], acc_op, self.first, m,
                                       ctypes.byref(self._acc)), "CanonicalGrads")
        self.added: List[int] = []
        # What the last reduce() set: each p.grad (a weak ref) and its version counter then. A
        # backward after it adds into that tensor in place; whether it was cleared first is told by
        # the version when the backward reaches the parameter (a hook, before the accumulation): a
        # zero_() (opt.zero_grad() on torch 1.13, model.zero_grad()) bumps it, a stale one has it.
        self._given: Optional[List[Any]] = None
        self._versions: List[int] = []
        self._hooks: List[Any] = []
        self._stale: List[int] = []

    @property
    def my_leaves(self) -> range:
        """The global micro-batch indices this rank runs."""
        return range(self.first, self.first + self.per_rank)

    def add(self, leaf: int) -> None:
        """Take the current ``p.grad`` of every parameter (None counts as zeros) as leaf ``leaf``'s
        gradient, and clear them (``p.grad = None``) so the next backward starts fresh."""
        if self._given is not None:
            # A backward after reduce() and opt.step() without clearing .grad adds into reduce()'s
            # result in place (same tensor): that leaf would carry the previous step's gradient, and
            # the weights would silently differ from one rank count to another (which leaves are a
            # rank's first depends on it). Zeroed in place is fine: only an untouched one is stale.
            stale = bool(self._stale) or any(self._is_stale(i) for i in range(len(self.params)))
            self._unhook()
            if stale:
                raise RuntimeError("schedc.torch.CanonicalGrads.add: p.grad still holds the previous reduce()'s "
                                   "gradient; clear it after opt.step(): opt.zero_grad() or p.grad = None")
        off = 0
        with torch.no_grad():
            for p in self.params:
                k = p.numel()
                if p.grad is None:
                    self._flat[off:off + k].zero_()
                else:
                    self._flat[off:off + k].copy_(p.grad.reshape(-1))
                off += k
        _check(lib.schedc_accumulate(self._acc, int(leaf), self._flat.data_ptr()), "CanonicalGrads.add")
        for p in self.params:
            p.grad = None
        self.added.append(int(leaf))

    def _is_stale(self, i: int) -> bool:
        """Parameter i's .grad is still reduce()'s tensor, unchanged since (not cleared)."""
        assert self._given is not None
        g = self.params[i].grad
        return g is not None and g is self._given[i]() and g._version == self._versions[i]

    def _unhook(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks, self._given, self._versions, self._stale = [], None, [], []

    def reduce(self) -> None:
        """Canonical sum (or average) of all leaves across ranks into every ``p.grad``; resets the
        accumulator for the next step. Collective: every rank calls it."""
        out = torch.empty(self.count, dtype=self.dtype)
        if self.exact:
            # every leaf of every rank on one grid, summed as integers across ranks (collective)
            with self.comm._lock:
                st = lib.schedc_accum_allreduce(self._acc, out.data_ptr(), self.comm._h(), Comm._plan(self.plan))
            lib.schedc_accum_reset(self._acc)
            self.added = []
            _check(st, "CanonicalGrads.reduce")
        else:
            _check(lib.schedc_accum_result(self._acc, out.data_ptr()), "CanonicalGrads.reduce")
            lib.schedc_accum_reset(self._acc)
            self.added = []
            self.comm.allreduce(out, op="sum", plan=self.plan)
            if self.op == "avg":
                out.div_(self.leaves)  # one division of the canonical sum
        off = 0
        for p in self.params:
            k = p.numel()
            p.grad = out[off:off + k].view_as(p).to(p.device, copy=True)  # CUDA parameters: copied back
            off += k
        self._unhook()
        self._given = [weakref.ref(p.grad) for p in self.params]
        self._versions = [p.grad._version for p in self.params]

        def hook(i: int) -> Any:
            def check(grad: torch.Tensor) -> None:  # runs before the backward accumulates into p.grad
                if self._given is not None and self._is_stale(i):
                    self._stale.append(i)
            return check
        self._hooks = [p.register_hook(hook(i)) for i, p in enumerate(self.params)]

    def close(self) -> None:
        self._unhook()
        if self._acc:
            lib.schedc_accum_free(self._acc)
            self._acc = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
