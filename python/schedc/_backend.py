# _backend.py — the "schedc" torch.distributed backend: ProcessGroupSchedc, a Python ProcessGroup
# over one schedc communicator per group. Collectives with arithmetic run verified plans (canonical
# by default); broadcast, all_gather and barrier run on schedc too; point-to-point and the other
# arithmetic-free ops go to an inner gloo group made over the same store (docs/python.md lists
# which op goes where). A group's schedc ops run one at a time, in issue order, on its worker thread.
import atexit
import datetime
import os
import socket
import weakref
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.distributed as dist

from . import Comm, Error, Plan, _order, canonical_plan, unique_id
from .compress import _issued, _sparse_allreduce

__all__ = ["ProcessGroupSchedc", "Options", "set_order", "set_exact", "register"]

# dtypes the C library takes as they are; the rest: see _Prepared
_NATIVE = {torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64}
# small integer and bool types, reduced exactly in int64 and cast back: MIN/MAX exact, SUM/PRODUCT
# wrap modulo 2^bits as the narrow type's own arithmetic would; bool: SUM/MAX = or, PRODUCT/MIN = and
_WIDEN = {torch.int8, torch.uint8, torch.int16, torch.bool} | {getattr(torch, n) for n in ("uint16", "uint32")
                                                                 if hasattr(torch, n)}
_MPI_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
ORDERS = ("canonical", "ring")


_EXACT_TORCH = {torch.float32, torch.float16, torch.bfloat16}
EXACT_ENV = "SCHEDC_TORCH_EXACT"


def _env_exact() -> bool:
    v = os.environ.get(EXACT_ENV, "").strip().lower()
    if v in ("", "0", "false", "no", "off"):
        return False
    if v in ("1", "true", "yes", "on"):
        return True
    raise ValueError("schedc backend: %s=%r: use 1 (exact mode for every group made from now on) or 0"
                     % (EXACT_ENV, os.environ[EXACT_ENV]))


class Options:
    """Per-group options: ``order="canonical"`` (default: the bits do not depend on message size,
    bucket layout or coalescing) or ``"ring"`` (the communicator's default plan — the built-in
    ring, or the tuning table's choice: faster on some sizes, bits depend on the layout). Pass as
    ``dist.new_group(ranks, pg_options=schedc.torch.Options(order="ring"))`` or change a group
    later with ``schedc.torch.set_order(group, "ring")`` (every rank, at the same point).

    ``exact=True``: exact mode for the group: every SUM and AVG of float32, float16 and bfloat16
    (all_reduce, reduce, reduce_scatter in every form, coalesced) is the exact sum on one grid,
    rounded once — the same bits for every plan and rank layout (docs/determinism.md). None (the
    default): ``$SCHEDC_TORCH_EXACT`` (1 or 0) when the group is made; ``set_exact`` later.

    ``wire="q8"`` or ``"q16"``: every SUM and AVG of float32, float16 and bfloat16 CPU tensors
    (all_reduce, reduce, reduce_scatter, coalesced) is summed as 8- or 16-bit integers on one grid,
    the same bits for every plan and rank layout (docs/compression.md); error feedback needs a
    residual per tensor: schedc.torch.quantized_hook's."""

    def __init__(self, order: str = "canonical", exact: Optional[bool] = None, wire: Optional[str] = None) -> None:
        if order not in ORDERS:
            raise ValueError("schedc.torch.Options: order must be one of %s, not %r" % (ORDERS, order))
        if wire not in (None, "default", "q8", "q16") or (wire in ("q8", "q16") and exact):
            raise ValueError("schedc.torch.Options: wire must be 'q8' or 'q16' (not with exact=True), not %r" % (wire,))
        self.order = order
        self.exact = exact
        self.wire = None if wire == "default" else wire


def _op_name(op: Any) -> str:
    R = dist.ReduceOp
    for attr, name in (("SUM", "sum"), ("AVG", "avg"), ("PRODUCT", "prod"), ("MIN", "min"), ("MAX", "max")):
        if hasattr(R, attr) and op == getattr(R, attr):
            return name
    shown = next((a for a in ("BAND", "BOR", "BXOR", "PREMUL_SUM") if hasattr(R, a) and op == getattr(R, a)),
                 str(getattr(op, "op", op)))
    raise RuntimeError("schedc backend: reduce op %s is not supported (SUM, AVG, PRODUCT, MIN, MAX)" % shown)


def _check_dtype(dtype: torch.dtype, what: str, op: str) -> None:
    """Refuse, in the caller's thread, a dtype an arithmetic op cannot take."""
    if dtype in _NATIVE:
        return
    if dtype in _WIDEN:
        if op == "avg":
            raise TypeError("schedc backend: %s: AVG of %s tensors is not supported (SUM, PRODUCT, MIN, MAX are)"
                            % (what, dtype))
        return
    raise TypeError("schedc backend: %s: dtype %s is not supported (float32, float64, float16, bfloat16, int32, "
                    "int64; int8, uint8, int16, bool with SUM/PRODUCT/MIN/MAX)" % (what, dtype))


class _Prepared:
    """A tensor as the C library can take it: itself (contiguous, a native dtype), a contiguous
    copy, a widened int64 copy (small ints, bool), or for data movement its raw bytes as int32
    words; ``finish()`` writes the result back into the caller's tensor."""

    def __init__(self, t: torch.Tensor, what: str, arith: bool, op: str = "") -> None:
        # detached: a collective writes the data, as gloo's does, and autograd does not see it; DDP
        # with backward(create_graph=True) hands over buckets that require grad (Comm refuses those)
        if t.requires_grad:
            t = t.detach()
        self.t = t
        self.raw = 0
        if t.is_neg():  # a negative view (torch._neg_view, x.conj().imag): its memory holds -t; finish() writes back
            t = t.resolve_neg()
        if t.dtype in _NATIVE:
            self.buf = t if t.is_contiguous() else t.contiguous()
        elif arith:
            _check_dtype(t.dtype, what, op)
            self.buf = t.to(torch.int64, memory_format=torch.contiguous_format).reshape(-1)
        else:
            # no arithmetic: move the bytes, padded to whole int32 words (copies; bit-exact)
            n = t.numel() * t.element_size()
            self.raw = n
            b = torch.zeros((n + 3) // 4 * 4, dtype=torch.uint8, device=t.device)
            if n:
                b[:n].copy_(t.contiguous().reshape(-1).view(torch.uint8))
            self.buf = b.view(torch.int32)

    def finish(self) -> None:
        if self.buf is self.t:
            return
        if self.raw:
            self.t.copy_(self.buf.view(torch.uint8)[:self.raw].view(self.t.dtype).reshape(self.t.shape))
        elif self.t.numel():
            self.t.copy_(self.buf.reshape(self.t.shape))  # int64 -> narrow type: wraps; -> bool: nonzero


def _same_length(outputs: List[torch.Tensor], inputs: List[torch.Tensor], what: str) -> None:
    if len(outputs) != len(inputs):
        raise RuntimeError("schedc backend: %s requires input/output tensor lists to have the same length (got %d "
                           "outputs, %d inputs)" % (what, len(outputs), len(inputs)))


def _one(tensors: List[torch.Tensor], what: str) -> torch.Tensor:
    if len(tensors) != 1:
        raise RuntimeError("schedc backend: %s takes one tensor per process, got %d" % (what, len(tensors)))
    return tensors[0]


# ---- the order: one executor per group, its ops in the program's order (_order.py) -------------
_orders: "weakref.WeakSet[_order.Order]" = weakref.WeakSet()


def _in_torch_words(e: BaseException) -> BaseException:
    """A timeout as PyTorch's backends word it: " Timed out " (gloo's; PyTorch's own tests and
    users' retry logic match it), as a DistBackendError where torch has one. The rank that timed
    out first gets SCHEDC_ETIMEOUT; the others, SCHEDC_EPEER quoting its "timed out" — a timeout
    for them too, as gloo reports it on every rank. schedc's message, which names the missing
    rank, follows, and the schedc.Error is its cause."""
    timeout = isinstance(e, Error) and (e.status == "SCHEDC_ETIMEOUT" or
                                        (e.status == "SCHEDC_EPEER" and " timed out " in e.message))
    if not timeout:
        return e
    err = getattr(dist, "DistBackendError", RuntimeError)("schedc backend: Timed out (%s): %s" % (e.status, e.message))
    err.__cause__ = e
    return err


@atexit.register
def _stop_orders() -> None:
    # Before the interpreter finalises: a daemon thread still completing a future (its C++ code
    # released the GIL) would be killed when it takes the GIL back, inside C++ — "terminate called
    # without an active exception". Registered after schedc's own at-exit close, so it runs first.
    for o in list(_orders):
        o.stop(timeout=30.0)


_WorkBase = getattr(dist, "_Work", None) or dist.Work


def _outputs(fut: Any) -> Any:
    return fut.value()  # raises the op's exception: the chained future fails in C++ (see get_future)


def _secs(timeout: Any) -> Optional[float]:
    """Work.wait's timeout in seconds; None: none (torch's default, a zero timedelta)."""
    if timeout is None:
        return None
    s = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    return s if s > 0 else None


class _Work(_WorkBase):  # type: ignore[misc, valid-type]
    """gloo-like Work over one op of a group's order: ``wait(timeout)`` returns once the op ran and
    its future's callbacks returned (gloo's), raises the op's failure, and after ``timeout`` raises
    "Operation timed out!" as gloo does (the op goes on); ``get_future()``."""

    def __init__(self, order: _order.Order, op: _order._Op) -> None:
        super().__init__()
        self._order = order
        self._op = op
        self._cfut: Any = None

    def wait(self, timeout: Any = None) -> bool:
        op, o = self._op, self._order
        o.check_wait(op)  # a callback waiting for an op ordered after its own: refused, not a hang
        s = _secs(timeout)
        if not o.wait_done(op, s):
            raise RuntimeError("Operation timed out! (schedc backend: %s not done after %g s; it stays in the group's "
                               "order: wait() again)" % (_order._name(op), s))
        o.settle(op)
        if op.exc is not None:
            raise op.exc
        return True

    def is_completed(self) -> bool:
        return self._op.done and self._op.completed

    def is_success(self) -> bool:
        return self._op.done and self._op.exc is None

    def exception(self) -> Any:
        return self._op.exc if self._op.done else None

    def get_future(self) -> Any:
        """The op's future as torch's C++ needs it. A Python future's set_exception stores the
        exception as the future's *value* (only Python's wait() raises it), so C++ readers saw a
        completed future: DDP's reducer took the exception object for the output tensor list and
        crashed (SIGSEGV in parseCppCommHookResult, e.g. under backward(create_graph=True)). The
        future handed out is a then() of the op's: a failure raised in the callback marks it failed
        in C++ too, so the reducer throws it from backward(); its value is the outputs otherwise.
        Callbacks registered on it take their place in the group's order (_order.py)."""
        if self._cfut is None:
            self._cfut = _order.track(_order.orig_then(self._order.future(self._op), _outputs), self._order, self._op)
        return self._cfut

    def result(self) -> Any:
        self.wait()
        return self._op.result

    def synchronize(self) -> None:
        self.wait()


# ---- bootstrap ----------------------------------------------------------------------------------
def _host_id() -> str:
    """This process's host, as the library's sc_host_id sees it: SCHEDC_HOST_ID where set (tests
    that pretend to be several hosts), else the host name and the kernel's boot id."""
    if os.environ.get("SCHEDC_HOST_ID"):
        return "id:" + os.environ["SCHEDC_HOST_ID"]
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return socket.gethostname() + "/" + boot


def _gather(store: Any, key: str, rank: int, size: int, value: str) -> List[str]:
    store.set("schedc/%s/%d" % (key, rank), value)
    return [store.get("schedc/%s/%d" % (key, r)).decode() for r in range(size)]


def _store_allgather(store: Any, rank: int, size: int) -> Any:
    """The net backend's bootstrap through the group's store: round k, every rank's bytes under
    schedc/net/k/RANK (store.get waits for them, within the store's timeout)."""
    rounds = [0]

    def allgather(mine: bytes) -> List[bytes]:
        k = rounds[0]
        rounds[0] += 1
        store.set("schedc/net/%d/%d" % (k, rank), mine)
        return [mine if r == rank else store.get("schedc/net/%d/%d" % (k, r)) for r in range(size)]
    return allgather


def _make_comm(store: Any, rank: int, size: int, timeout_s: float, global_ranks: Optional[List[int]]) -> Comm:
    """A schedc communicator for the group, through the group's own store (a prefix store per
    group): shm when every rank is on one host, with a 128-bit id drawn by the group's rank 0;
    across hosts MPI_COMM_WORLD's communicator when an MPI launcher started every rank and the group
    is the whole world, else net (UCX), its ranks' addresses exchanged through the store."""
    facts = [f.split("|") for f in _gather(store, "host", rank, size,
                                           "%s|%d" % (_host_id(), any(v in os.environ for v in _MPI_LAUNCHER_VARS)))]
    hosts = set(f[0] for f in facts)
    if len(hosts) == 1:
        if rank == 0:
            store.set("schedc/uid", unique_id().hex())
        uid = bytes.fromhex(store.get("schedc/uid").decode())
        return Comm.shm(rank, size, uid=uid, timeout=timeout_s)
    # across hosts; every precondition is the same answer on every rank (from the same facts)
    world = dist.get_world_size() if dist.is_initialized() else None
    whole = (global_ranks is None or list(global_ranks) == list(range(size))) and (world in (None, size))
    if not (all(f[1] == "1" for f in facts) and whole):
        try:
            return Comm.net(rank, size, allgather=_store_allgather(store, rank, size), timeout=timeout_s)
        except Error as e:
            raise RuntimeError("schedc backend (net): the group spans %d hosts and no MPI launcher started it: %s"
                               % (len(hosts), e)) from e
    err = ""
    comm: Optional[Comm] = None
    try:
        comm = Comm.mpi(timeout=timeout_s)
        if comm.rank != rank or comm.nranks != size:
            err = ("torch rank %d of %d is MPI rank %d of %d: set RANK=$OMPI_COMM_WORLD_RANK and WORLD_SIZE="
                   "$OMPI_COMM_WORLD_SIZE" % (rank, size, comm.rank, comm.nranks))
    except Exception as e:
        err = str(e) or type(e).__name__
    errs = _gather(store, "mpi_err", rank, size, err)
    bad = [(r, e) for r, e in enumerate(errs) if e]
    if bad:
        if comm is not None:
            comm.close()
        raise RuntimeError("schedc backend (mpi): " + "; ".join("rank %d: %s" % (r, e) for r, e in bad[:4]))
    assert comm is not None
    return comm


def _timeout_s(timeout: Any) -> float:
    if isinstance(timeout, datetime.timedelta):
        return max(timeout.total_seconds(), 0.001)
    return float(timeout) if timeout else 0.0


# ---- the process group --------------------------------------------------------------------------
class ProcessGroupSchedc(dist.ProcessGroup):
    """A torch.distributed process group whose collectives run on schedc (docs/python.md):
    all_reduce, reduce, reduce_scatter (list and tensor forms), coalesced all-reduce, broadcast,
    all_gather (list and tensor forms), barrier. send/recv, all_to_all, gather, scatter and
    monitored_barrier go to ``self.gloo``, a gloo group over the same store (no arithmetic)."""

    def __init__(self, store: Any, rank: int, size: int, timeout: Any, global_ranks: Optional[List[int]] = None,
                 options: Optional[Options] = None) -> None:
        super().__init__(rank, size)
        self._r, self._n = int(rank), int(size)
        self._timeout = timeout
        self.order = (options.order if isinstance(options, Options) else "canonical")
        ex = options.exact if isinstance(options, Options) else None
        self.exact = _env_exact() if ex is None else bool(ex)
        self.wire = options.wire if isinstance(options, Options) else None  # docs/compression.md
        self.comm = _make_comm(store, self._r, self._n, _timeout_s(timeout), global_ranks)
        try:
            self.gloo = dist.ProcessGroupGloo(dist.PrefixStore("schedc-gloo/", store), self._r, self._n, timeout)
        except Exception:
            self.comm.close()
            raise
        self._order = _order.Order("schedc-pg-%d" % id(self), _timeout_s(timeout), _in_torch_words)
        _orders.add(self._order)
        # a group nobody references (torch 1.13's destroy_process_group drops it) ends its threads
        weakref.finalize(self, _order.Order.stop, self._order, 10.0)
        self._plans: Dict[Any, Optional[Plan]] = {}

    # -- identity
    def rank(self) -> int:
        return self._r

    def size(self) -> int:
        return self._n

    def getBackendName(self) -> str:  # noqa: N802 — torch's name
        return "schedc"

    def name(self) -> str:
        return "schedc"

    def _get_backend_name(self) -> str:
        return "schedc"

    # torch 2.x keeps a group's name on its C++ backends, which a Python group has none of: the
    # trampoline asks these (DeviceMesh, hence FSDP2, resolves groups by name)
    def _set_group_name(self, name: str) -> None:
        self._group_name = name

    def getGroupName(self) -> str:  # noqa: N802
        return getattr(self, "_group_name", "")

    def _set_group_desc(self, desc: str) -> None:
        self._group_desc = desc

    def getGroupDesc(self) -> str:  # noqa: N802
        return getattr(self, "_group_desc", "")

    # -- plumbing
    def _plan(self, coll: str, root: int = 0) -> Optional[Plan]:
        if self.order != "canonical" or coll not in ("allreduce", "reduce_scatter", "reduce"):
            return None  # the communicator's default plan (ring / tuning table); no arithmetic: any plan
        key = (coll, root if coll == "reduce" else 0)
        p = self._plans.get(key)
        if p is None:
            p = canonical_plan(self._n, coll, root)
            self._plans[key] = p
        return p

    def _compress(self, op: str, t: torch.Tensor) -> Dict[str, Any]:
        """The compression of a SUM/AVG issued now: a hook's for this call (compress.py), else the
        group's wire for float CPU tensors; as Comm's keyword arguments ({}: none)."""
        kw = _issued()
        if not kw and self.wire and op in ("sum", "avg") and t.dtype in _EXACT_TORCH and not t.is_cuda:
            kw = {"wire": self.wire}
        return kw

    def _exact(self, op: str, dtype: torch.dtype) -> bool:
        """Whether this op runs in exact mode: the group's option, for SUM/AVG of f32/f16/bf16."""
        return self.exact and op in ("sum", "avg") and dtype in _EXACT_TORCH

    def _submit(self, fn: Callable[[], Any], result: Any, tensors: List[torch.Tensor], opts: Any = None,
                what: str = "") -> _Work:
        """Place the op in the group's order (_order.py). A synchronous call (torch 2.x passes
        opts.asyncOp False) that is next in the order runs in the caller's thread: the same order,
        without the hand-off (docs/performance.md); the bits are the same on any thread (the
        library fixes the floating-point environment of each call)."""
        stream = None
        for t in tensors:
            if t.is_cuda:  # CUDA: enqueued on the issuer's stream; the future records it there
                stream = torch.cuda.current_stream(t.device)
                break
        op = _order._Op(fn, result, stream, what)
        self._order.issue(op, stream is None and getattr(opts, "asyncOp", True) is False)
        return _Work(self._order, op)

    def _reduce_into(self, t: torch.Tensor, op: str, what: str, call: Callable[[torch.Tensor], Any]) -> None:
        p = _Prepared(t, what, True, op)
        call(p.buf)
        p.finish()

    # -- collectives with arithmetic
    def allreduce(self, tensors: Any, opts: Any = None) -> _Work:
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        t = _one(tensors, "allreduce")
        sparse = t.is_sparse  # a sparse COO tensor: gathered and summed in rank order (compress.py)
        if not sparse:
            _check_dtype(t.dtype, "allreduce", op)  # refused now, in the caller
        plan = self._plan("allreduce")
        cw = {} if sparse else self._compress(op, t)
        ex = self._exact(op, t.dtype) and not cw

        def run() -> None:
            if sparse:
                return _sparse_allreduce(self, t, op)
            self._reduce_into(t, op, "allreduce", lambda b: self.comm.allreduce(b, op=op, plan=plan, exact=ex, **cw))
        return self._submit(run, tensors, tensors, opts, "allreduce")

    def allreduce_coalesced(self, tensors: List[torch.Tensor], opts: Any = None) -> _Work:
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        if len({t.dtype for t in tensors}) > 1:
            raise RuntimeError("schedc backend: allreduce_coalesced: the tensors must have one dtype, got %s"
                               % sorted(str(t.dtype) for t in tensors))
        if tensors:
            _check_dtype(tensors[0].dtype, "allreduce_coalesced", op)
        plan = self._plan("allreduce")
        # exact: one grid for the concatenation (per call), so a tensor's bits can depend on the others'
        # scale (docs/python.md); a wire likewise
        cw = self._compress(op, tensors[0]) if tensors else {}
        cw.pop("residual", None)  # a hook's residual is a bucket's: not the concatenation's
        ex = bool(tensors) and self._exact(op, tensors[0].dtype) and not cw

        def run() -> None:
            if not tensors:
                return
            flat = torch.cat([t.reshape(-1) for t in tensors])  # canonical: layout cannot change the bits
            self._reduce_into(flat, op, "allreduce_coalesced",
                              lambda b: self.comm.allreduce(b, op=op, plan=plan, exact=ex, **cw))
            off = 0
            for t in tensors:
                k = t.numel()
                t.copy_(flat[off:off + k].view(t.shape))
                off += k
        return self._submit(run, tensors, tensors, opts, "allreduce_coalesced")

    def reduce(self, tensors: List[torch.Tensor], opts: Any = None) -> _Work:
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = int(opts.rootRank) if opts is not None else 0
        t = _one(tensors, "reduce")
        _check_dtype(t.dtype, "reduce", op)
        plan = self._plan("reduce", root)
        cw = self._compress(op, t)
        cw.pop("topk", None)
        ex = self._exact(op, t.dtype) and not cw

        def run() -> None:
            self._reduce_into(t, op, "reduce", lambda b: self.comm.reduce(b, root=root, op=op, plan=plan, exact=ex, **cw))
        return self._submit(run, tensors, tensors, opts, "reduce")

    def _rs(self, out: torch.Tensor, inp: torch.Tensor, op: str, what: str, exact: bool, plan: Optional[Plan]) -> None:
        """reduce_scatter of the flat ``inp`` (n blocks) into ``out`` (one block); ``exact`` and
        ``plan``: the group's exact mode and order when the op was issued."""
        if inp.numel() != out.numel() * self._n or inp.dtype != out.dtype:
            raise RuntimeError("schedc backend: %s: the input must hold %d x the output's %d elements of its dtype "
                               "(got %d of %s)" % (what, self._n, out.numel(), inp.numel(), inp.dtype))
        pi = _Prepared(inp, what, True, op)
        po = _Prepared(out, what, True, op)
        cw = {"wire": self.wire} if self.wire and op in ("sum", "avg") and out.dtype in _EXACT_TORCH and not out.is_cuda else {}
        self.comm.reduce_scatter(pi.buf, po.buf, op=op, plan=plan,
                                 exact=exact and op in ("sum", "avg") and out.dtype in _EXACT_TORCH and not cw, **cw)
        po.finish()

    def reduce_scatter(self, output_tensors: List[torch.Tensor], input_tensors: List[List[torch.Tensor]],
                       opts: Any = None) -> _Work:
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        out = _one(output_tensors, "reduce_scatter")
        ins = _one(input_tensors, "reduce_scatter")
        if len(ins) != self._n or any(x.numel() != out.numel() or x.dtype != out.dtype for x in ins):
            raise RuntimeError("schedc backend: reduce_scatter: %d input tensors of the output's size and dtype needed"
                               % self._n)
        _check_dtype(out.dtype, "reduce_scatter", op)
        ex, plan = self.exact, self._plan("reduce_scatter")  # set_exact / set_order as issued

        def run() -> None:
            self._rs(out, torch.cat([x.reshape(-1) for x in ins]), op, "reduce_scatter", ex, plan)
        return self._submit(run, output_tensors, [out], opts, "reduce_scatter")

    def _reduce_scatter_base(self, output: torch.Tensor, inp: torch.Tensor, opts: Any = None) -> _Work:
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        _check_dtype(output.dtype, "reduce_scatter_tensor", op)
        ex, plan = self.exact, self._plan("reduce_scatter")

        def run() -> None:
            self._rs(output, inp, op, "reduce_scatter_tensor", ex, plan)  # any shape: _Prepared takes its elements
        return self._submit(run, [output], [output], opts, "reduce_scatter_tensor")  # a list, as gloo's

    reduce_scatter_single = _reduce_scatter_base  # torch >= 2.12's name

    def reduce_scatter_tensor_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                                        opts: Any = None) -> _Work:
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        _same_length(outputs, inputs, "reduce_scatter_tensor_coalesced")
        for o in outputs:
            _check_dtype(o.dtype, "reduce_scatter_tensor_coalesced", op)
        ex, plan = self.exact, self._plan("reduce_scatter")

        def run() -> None:
            for o, i in zip(outputs, inputs):
                self._rs(o, i, op, "reduce_scatter_tensor_coalesced", ex, plan)
        return self._submit(run, outputs, outputs, opts, "reduce_scatter_tensor_coalesced")

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced

    # -- data movement on schedc
    def broadcast(self, tensors: Any, opts: Any = None) -> _Work:
        if isinstance(tensors, torch.Tensor):
            tensors = [tensors]
        root = int(opts.rootRank) if opts is not None else 0
        t = _one(tensors, "broadcast")

        def run() -> None:
            p = _Prepared(t, "broadcast", False)
            self.comm.broadcast(p.buf, root=root)
            p.finish()
        return self._submit(run, tensors, tensors, opts, "broadcast")

    def _ag(self, out: torch.Tensor, inp: torch.Tensor, what: str) -> None:
        if out.numel() != inp.numel() * self._n or out.dtype != inp.dtype:
            raise RuntimeError("schedc backend: %s: the output must hold %d x the input's %d elements of its dtype "
                               "(got %d of %s)" % (what, self._n, inp.numel(), out.numel(), out.dtype))
        if inp.dtype in _NATIVE:
            pi = _Prepared(inp, what, False)
            po = _Prepared(out, what, False)
            self.comm.allgather(pi.buf, po.buf)
            po.finish()
            return
        # other dtypes: each rank's bytes padded to whole int32 words, block by block
        kb = inp.numel() * inp.element_size()
        w = (kb + 3) // 4
        ib = torch.zeros(w * 4, dtype=torch.uint8, device=inp.device)
        if kb:
            ib[:kb].copy_(inp.resolve_neg().contiguous().reshape(-1).view(torch.uint8))
        ob = torch.empty(self._n * w * 4, dtype=torch.uint8, device=inp.device)
        self.comm.allgather(ib.view(torch.int32), ob.view(torch.int32))
        if kb:
            out.copy_(ob.view(self._n, w * 4)[:, :kb].reshape(-1).view(out.dtype).reshape(out.shape))

    def allgather(self, output_tensors: List[List[torch.Tensor]], input_tensors: List[torch.Tensor],
                  opts: Any = None) -> _Work:
        inp = _one(input_tensors, "allgather")
        outs = _one(output_tensors, "allgather")
        if len(outs) != self._n or any(o.numel() != inp.numel() or o.dtype != inp.dtype for o in outs):
            raise RuntimeError("schedc backend: allgather: %d output tensors of the input's size and dtype needed"
                               % self._n)

        def run() -> None:
            flat = inp.new_empty(inp.numel() * self._n)
            self._ag(flat, inp.reshape(-1) if inp.is_contiguous() else inp.contiguous().reshape(-1), "allgather")
            k = inp.numel()
            for r, o in enumerate(outs):
                o.copy_(flat[r * k:(r + 1) * k].view(o.shape))
        return self._submit(run, output_tensors, [inp], opts, "allgather")

    def _allgather_base(self, output: torch.Tensor, inp: torch.Tensor, opts: Any = None) -> _Work:
        def run() -> None:
            self._ag(output, inp, "all_gather_into_tensor")
        return self._submit(run, [output], [output], opts, "all_gather_into_tensor")  # a list, as gloo's

    all_gather_single = _allgather_base  # torch >= 2.12's name

    def allgather_into_tensor_coalesced(self, outputs: List[torch.Tensor], inputs: List[torch.Tensor],
                                        opts: Any = None) -> _Work:
        _same_length(outputs, inputs, "allgather_into_tensor_coalesced")

        def run() -> None:
            for o, i in zip(outputs, inputs):
                self._ag(o, i, "allgather_into_tensor_coalesced")
        return self._submit(run, outputs, outputs, opts, "allgather_into_tensor_coalesced")

    all_gather_single_coalesced = allgather_into_tensor_coalesced

    def barrier(self, opts: Any = None) -> _Work:
        t = torch.zeros(1, dtype=torch.int32)

        def run() -> None:
            self.comm.allreduce(t)
        return self._submit(run, [], [], opts, "barrier")

    # -- what torch asks of a backend
    def _get_backend(self, device: Any) -> "ProcessGroupSchedc":
        """The group is its own backend for every device (torch asks it for ``supports_coalescing``
        in batch_isend_irecv, for ``options`` in pipelining); torch's C++ method raised "No backend
        type associated with device type cpu" for a Python group."""
        return self

    supports_coalescing = False  # batch_isend_irecv: one isend/irecv at a time (on the inner gloo group)
    supports_splitting = False

    def supports_tensor_alloc(self, device: Any) -> bool:
        """FSDP2's allocation from the process group (opt-in): schedc takes any tensor; torch allocates."""
        return False

    @property
    def options(self) -> Any:
        return self.gloo.options

    def shutdown(self) -> None:
        """Run the ops issued, stop the group's threads and free the communicator; torch 2.x's
        destroy_process_group calls it (on 1.13, schedc.torch's wrapper of it does)."""
        self._order.stop(timeout=_timeout_s(self._timeout) + 10.0)
        self.comm.close(wait=10.0)

    def abort(self) -> None:
        """Fail every op not yet running at once (their wait() raises), and free the communicator
        once the op running now, if any, has ended (a C call cannot be interrupted: it ends by
        itself or by the group's timeout). Returns at once; later ops raise."""
        self._order.stop(None, abort=getattr(dist, "DistBackendError", RuntimeError)(
            "schedc backend: the process group was aborted (ProcessGroup.abort()) before this op ran"))
        comm = self.comm
        self._order.after_stop(lambda: comm.close(wait=10.0))
        abort = getattr(self.gloo, "abort", None)
        if abort is not None:
            abort()


# send/recv, all_to_all, gather, scatter, ...: data movement schedc does not implement. They
# reach the same peers through gloo; no arithmetic, so the bits are the inputs' whichever way.
_GLOO_OPS = ("send", "recv", "recv_anysource", "alltoall", "alltoall_base", "all_to_all_single", "gather",
             "gather_single", "gather_into_tensor", "scatter", "allgather_coalesced", "monitored_barrier")


def _delegate(name: str) -> Callable[..., Any]:
    def op(self: ProcessGroupSchedc, *args: Any, **kw: Any) -> Any:
        f = getattr(self.gloo, name, None)
        if f is None:
            raise RuntimeError("schedc backend: %s is not supported (neither schedc nor this torch's gloo has it)"
                               % name)
        return f(*args, **kw)
    op.__name__ = name
    op.__doc__ = "%s on the inner gloo group (no arithmetic)." % name
    return op


for _n in _GLOO_OPS:
    setattr(ProcessGroupSchedc, _n, _delegate(_n))


def set_order(group: Any = None, order: str = "canonical") -> None:
    """Choose the plans of a schedc group's arithmetic collectives from now on: "canonical" (the
    default) or "ring" (the communicator's default plan). Call it on every rank of the group at
    the same point in the op sequence."""
    if order not in ORDERS:
        raise ValueError("schedc.torch.set_order: order must be one of %s, not %r" % (ORDERS, order))
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupSchedc):
        raise TypeError("schedc.torch.set_order: %r is not a schedc process group" % (pg,))
    pg.order = order


def set_exact(group: Any = None, exact: bool = True) -> None:
    """Turn exact mode on (or off) for a schedc group's SUM/AVG of float32, float16 and bfloat16
    from now on (``Options.exact``). Call it on every rank of the group at the same point in the
    op sequence (a rank in exact mode and one not: SCHEDC_EMISMATCH on both, naming the op)."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupSchedc):
        raise TypeError("schedc.torch.set_exact: %r is not a schedc process group" % (pg,))
    pg.exact = bool(exact)


def _create(opts: Any, pg_options: Any = None) -> ProcessGroupSchedc:
    """Backend creator (extended API): torch calls it on each member of a new group."""
    ranks = list(getattr(opts, "global_ranks_in_group", None) or []) or None
    pg = ProcessGroupSchedc(opts.store, opts.group_rank, opts.group_size, opts.timeout, ranks,
                            pg_options if isinstance(pg_options, Options) else None)
    if getattr(opts, "group_id", None) is not None:
        pg._set_group_name(opts.group_id)
    return pg


def _refuse_ddp_on_torch1() -> None:
    """torch 1.13's DDP calls the process group from C++, which cannot reach a Python group's
    methods (no trampoline before torch 2.0): its constructor would wait forever. Say so instead."""
    try:
        import torch.nn.parallel.distributed as ddp_mod
    except Exception:
        return
    orig = getattr(ddp_mod, "_verify_param_shape_across_processes", None)
    if orig is None or getattr(orig, "_schedc", False):
        return

    def verify(process_group: Any, *a: Any, **k: Any) -> Any:
        if isinstance(process_group, ProcessGroupSchedc):
            raise RuntimeError("schedc backend: DistributedDataParallel over the schedc process group needs torch >= 2.0 "
                               "(this is %s); on it use init_process_group('gloo') with schedc.torch's "
                               "allreduce_hook or CanonicalGrads (docs/python.md)" % torch.__version__)
        return orig(process_group, *a, **k)
    verify._schedc = True  # type: ignore[attr-defined]
    ddp_mod._verify_param_shape_across_processes = verify


def _shutdown_on_destroy_torch1() -> None:
    """torch 1.13's destroy_process_group only forgets its groups (2.x calls shutdown()): a schedc
    group's threads and communicator lived on while anything referenced it. The wrapper shuts
    down the schedc groups it destroys."""
    c10d = dist.distributed_c10d
    orig = c10d.destroy_process_group
    if getattr(orig, "_schedc", False):
        return

    def destroy_process_group(group: Any = None) -> None:
        world = group is None or group == c10d.GroupMember.WORLD
        pgs = list(c10d._pg_map) if world else [group]  # type: ignore[attr-defined]
        orig(group)
        for pg in pgs:
            if isinstance(pg, ProcessGroupSchedc):
                pg.shutdown()
    destroy_process_group.__doc__ = orig.__doc__
    destroy_process_group._schedc = True  # type: ignore[attr-defined]
    c10d.destroy_process_group = destroy_process_group
    dist.destroy_process_group = destroy_process_group


def register() -> None:
    """Register the name "schedc" with torch.distributed (idempotent; done by ``import schedc.torch``),
    and route callbacks on torch futures through the groups' op orders (_order.install)."""
    _order.install()
    if int(torch.__version__.split(".")[0]) < 2:
        _refuse_ddp_on_torch1()
        _shutdown_on_destroy_torch1()
    if "SCHEDC" in dist.Backend._plugins:  # type: ignore[attr-defined]
        return
    try:
        dist.Backend.register_backend("schedc", _create, extended_api=True, devices=["cpu", "cuda"])
    except TypeError:  # torch 1.13: no devices=
        dist.Backend.register_backend("schedc", _create, extended_api=True)
