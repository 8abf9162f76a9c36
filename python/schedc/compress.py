# compress.py — gradient compression in torch (docs/compression.md): DDP communication hooks
# (QuantizedState + quantized_hook, TopKState + topk_hook) over a schedc Comm, the "schedc" backend or
# any other process group, with error feedback whose residuals are plain tensors (state_dict()); the
# per-call compression a hook hands to the schedc backend; the backend's all_reduce of sparse COO
# tensors. Re-exported by schedc.torch.
"""Compression hooks for DDP and the schedc backend's sparse all-reduce (``schedc.torch``)."""
import contextlib
import math
import threading
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple

import torch
import torch.distributed as dist

from .communicators import Comm

__all__ = ["QuantizedState", "quantized_hook", "TopKState", "topk_hook"]

_FLOATS = (torch.float32, torch.float16, torch.bfloat16)
_NONE = -100000  # the grid words' "every input is zero" (runtime/core/exact.h SC_EXACT_NONE)

# ---- what a hook hands to the schedc backend for one call (read when the op is issued) -----------
_issue = threading.local()


@contextlib.contextmanager
def _compressing(**kw: Any) -> Iterator[None]:
    """Within the block, the calling thread's all_reduce on a schedc group is compressed with ``kw``
    (wire, topk, residual: Comm.allreduce's arguments)."""
    prev = getattr(_issue, "kw", None)
    _issue.kw = kw
    try:
        yield
    finally:
        _issue.kw = prev


def _issued() -> Dict[str, Any]:
    """The compression of the all_reduce being issued in this thread (a hook's), or {}."""
    return dict(getattr(_issue, "kw", None) or {})


# ---- hook state ------------------------------------------------------------------------------------
class _State:
    """What both hooks keep: where the buckets go (``comm``: a schedc.Comm; else ``process_group``,
    default the default group), the op ("avg" or "sum"), and with ``error_feedback`` each gradient
    element's residual, zero at first. They live in one tensor per DDP bucket (``residuals``, keyed by
    bucket.index(), in the bucket's layout), and follow their parameter: DDP rebuilds its buckets
    after the first iteration in another order (often the same size: the reverse), and a fresh DDP
    after a restart starts from the first layout again. A parameter's name is its place (bucket,
    position) in the first layout this state saw it in: the same in every run of the same model and
    ``bucket_cap_mb``. The residuals are optimizer-like state, and each rank's own:
    ``schedc.checkpoint.save`` keeps every rank's (``checkpoint_per_rank``) and ``load`` gives each
    rank its own back (``state_dict()``: per parameter name)."""

    kind = ""
    checkpoint_per_rank = True  # schedc.checkpoint: the residuals differ from rank to rank

    def __init__(self, comm: Optional[Comm], process_group: Any, op: str, error_feedback: bool) -> None:
        if op not in ("avg", "sum"):
            raise ValueError("schedc.torch.%s: op must be 'avg' or 'sum', not %r" % (type(self).__name__, op))
        if comm is not None and process_group is not None:
            raise ValueError("schedc.torch.%s: give comm= or process_group=, not both" % type(self).__name__)
        self.comm = comm
        self.process_group = process_group
        self.op = op
        self.error_feedback = bool(error_feedback)
        self.residuals: Dict[int, torch.Tensor] = {}
        self.calls = 0
        self._layouts: Dict[int, Tuple[int, ...]] = {}  # bucket index -> id() of its parameters, in order
        self._params: Dict[int, Any] = {}  # id() -> the parameter (kept, so that its id stays its own)
        self._names: Dict[int, str] = {}  # id() -> "bucket.position" in the first layout it was seen in
        self._loose: Dict[int, torch.Tensor] = {}  # a rebuilt bucket's parameters not placed again yet
        self._pending: Dict[str, torch.Tensor] = {}  # load_state_dict's, by name, until the parameter shows
        self._unplaced: set = set()  # buckets whose parameters do not tile them: one residual, by position

    def _slices(self, index: int) -> Dict[int, torch.Tensor]:
        """Bucket ``index``'s residual as views per parameter id (empty: no layout)."""
        r, ids, out, off = self.residuals.get(index), self._layouts.get(index), {}, 0
        if r is None or ids is None or index in self._unplaced:
            return out
        flat = r.reshape(-1)
        for pid in ids:
            k = self._params[pid].numel()
            out[pid] = flat[off:off + k]
            off += k
        return out

    def _residual(self, index: int, t: torch.Tensor, params: Sequence[Any]) -> Optional[torch.Tensor]:
        if not self.error_feedback:
            return None
        ids = tuple(id(p) for p in params)
        r = self.residuals.get(index)
        if r is not None and self._layouts.get(index) == ids and r.shape == t.shape and r.dtype == t.dtype:
            if r.device != t.device:  # loaded (CPU) for a bucket on a GPU
                r = self.residuals[index] = r.to(t.device)
            return r
        # a new bucket or a rebuilt one: each parameter's residual moves with it
        self._loose.update(self._slices(index))
        self.residuals.pop(index, None)
        self._layouts.pop(index, None)
        r = torch.zeros_like(t)
        flat, off = r.reshape(-1), 0
        placed = sum(p.numel() for p in params) == t.numel()  # DDP packs a bucket's gradients densely
        for pos, p in enumerate(params):
            pid = id(p)
            self._params[pid] = p
            name = self._names.setdefault(pid, "%d.%d" % (index, pos))
            k = p.numel()
            src = self._loose.pop(pid, None)
            if src is None:
                for i in list(self._layouts):
                    src = self._slices(i).get(pid)
                    if src is not None:
                        break
            if src is None:
                src = self._pending.pop(name, None)
            if placed and src is not None and src.numel() == k:
                flat[off:off + k].copy_(src.reshape(-1).to(r.dtype))
            off += k
        self.residuals[index] = r
        self._layouts[index] = ids
        if placed:
            self._unplaced.discard(index)
        else:
            self._unplaced.add(index)
        return r

    def state_dict(self) -> Dict[str, Any]:
        """The state to checkpoint: settings, calls so far, and every parameter's residual (copies;
        ``residuals``: name -> a flat tensor)."""
        res = {self._names[pid]: v.detach().clone() for pid, v in self._loose.items()}
        for i in self.residuals:
            res.update({self._names[pid]: v.detach().clone() for pid, v in self._slices(i).items()})
        for name, v in self._pending.items():
            res.setdefault(name, v.clone())
        d = {"kind": self.kind, "op": self.op, "error_feedback": self.error_feedback, "calls": self.calls,
             "residuals": res}
        d.update(self._settings())
        return d

    def load_state_dict(self, d: Dict[str, Any]) -> None:
        """Restore ``state_dict()``'s residuals (each taken up when its parameter's bucket next
        runs) and call count; the settings must match."""
        if d.get("kind") != self.kind or any(d.get(k) != v for k, v in self._settings().items()):
            raise ValueError("schedc.torch.%s.load_state_dict: the state is of %s %s, this hook is %s %s"
                             % (type(self).__name__, d.get("kind"), {k: d.get(k) for k in self._settings()},
                                self.kind, self._settings()))
        self.calls = int(d.get("calls", 0))
        self.residuals, self._layouts, self._loose, self._unplaced = {}, {}, {}, set()
        self._pending = {str(k): v.detach().cpu().clone().reshape(-1) for k, v in d.get("residuals", {}).items()}

    def _settings(self) -> Dict[str, Any]:
        return {}

    def __getstate__(self) -> Dict[str, Any]:  # pickling (torch.save of the state): no comm, no group
        s = dict(self.__dict__)  # and no parameters: the residuals by name, taken up as after load_state_dict
        s.update(comm=None, process_group=None, residuals={}, _layouts={}, _params={}, _names={}, _loose={}, _unplaced=set(),
                 _pending={k: v.reshape(-1) for k, v in self.state_dict()["residuals"].items()})
        return s

    def _group(self) -> Any:
        return self.process_group if self.process_group is not None else dist.distributed_c10d._get_default_group()

    def _run(self, bucket: dist.GradBucket, kw: Dict[str, Any]) -> "torch.futures.Future[torch.Tensor]":
        """Reduce the bucket's tensor in place: through the schedc Comm, the schedc group, or the torch
        path of another group; a future holding it."""
        t = _bucket_tensor(bucket)
        if t.dtype not in _FLOATS:
            raise TypeError("schedc.torch.%s: buckets of %s: compression takes float32, float16 or bfloat16"
                            % (type(self).__name__, t.dtype))
        r = self._residual(bucket.index(), t, bucket.parameters())
        self.calls += 1
        if self.comm is not None:  # the C library directly (host memory)
            if t.is_cuda:
                raise TypeError("schedc.torch.%s: a CUDA bucket with comm=: register the hook over the job's NCCL "
                                "group (process_group=) instead" % type(self).__name__)
            self.comm.allreduce(t, op=self.op, residual=r, **kw)
            return _done(t)
        pg = self._group()
        from ._backend import ProcessGroupSchedc
        if isinstance(pg, ProcessGroupSchedc):  # in the group's op order, compressed by the C library
            with _compressing(residual=r, **kw):
                work = dist.all_reduce(t, op=dist.ReduceOp.AVG if self.op == "avg" else dist.ReduceOp.SUM, group=pg,
                                       async_op=True)
            return work.get_future().then(lambda f: (f.value(), t)[1])  # value(): the op's failure raises
        if "wire" in kw:
            _quantized_torch(t, int(kw["wire"][1:]), r, self.op, pg)
        else:
            _topk_torch(t, float(kw["topk"]), r, self.op, pg)
        return _done(t)


def _done(t: torch.Tensor) -> "torch.futures.Future[torch.Tensor]":
    fut: torch.futures.Future[torch.Tensor] = (torch.futures.Future(devices=[t.device]) if t.is_cuda
                                               else torch.futures.Future())
    fut.set_result(t)
    return fut


def _bucket_tensor(bucket: dist.GradBucket) -> torch.Tensor:
    return bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()


class QuantizedState(_State):
    """State for ``quantized_hook``: ``bits`` 8 or 16 (the wire q8 or q16: each rank's gradient as
    integers of that many bits on one grid, summed exactly; docs/compression.md), ``error_feedback``
    (default True: what a bucket did not send is added to its next gradient), ``op`` "avg" (default)
    or "sum", and where the buckets go: ``comm=`` a schedc.Comm (host buckets), else
    ``process_group=`` (default: the default group) — the "schedc" backend (the C library, in the
    group's op order) or any other group (gloo, NCCL: the same grid and integers computed with torch
    ops, the integers summed by that group's all_reduce; q16 travels as int32 there, which NCCL and
    gloo sum). The same bits on every rank and run, for every rank order and plan."""

    kind = "quantized"

    def __init__(self, bits: int = 8, error_feedback: bool = True, comm: Optional[Comm] = None,
                 process_group: Any = None, op: str = "avg") -> None:
        if bits not in (8, 16):
            raise ValueError("schedc.torch.QuantizedState: bits must be 8 or 16, not %r" % (bits,))
        super().__init__(comm, process_group, op, error_feedback)
        self.bits = bits

    def _settings(self) -> Dict[str, Any]:
        return {"bits": self.bits}


def quantized_hook(state: QuantizedState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: ``ddp.register_comm_hook(QuantizedState(bits=8), quantized_hook)``.
    Sums the bucket on the wire q8/q16 (with error feedback) and averages it (op "avg")."""
    return state._run(bucket, {"wire": "q%d" % state.bits})


class TopKState(_State):
    """State for ``topk_hook``: each rank sends the ``fraction`` (default 0.01) of each bucket's
    elements with the largest magnitudes (ties: the lower index first) and their indices;
    ``error_feedback`` (default True) keeps the rest for the next step. Over a schedc Comm or the
    schedc backend the union is summed exactly on one grid (exact mode's: docs/compression.md);
    over another group in rank order in float32 — either way the same bits on every rank and run."""

    kind = "topk"

    def __init__(self, fraction: float = 0.01, error_feedback: bool = True, comm: Optional[Comm] = None,
                 process_group: Any = None, op: str = "avg") -> None:
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise ValueError("schedc.torch.TopKState: fraction must be in (0, 1], not %r" % (fraction,))
        super().__init__(comm, process_group, op, error_feedback)
        self.fraction = float(fraction)

    def _settings(self) -> Dict[str, Any]:
        return {"fraction": self.fraction}


def topk_hook(state: TopKState, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: ``ddp.register_comm_hook(TopKState(0.01), topk_hook)``."""
    return state._run(bucket, {"topk": state.fraction})


# ---- the torch path: another process group (gloo, NCCL) -----------------------------------------------
def _feedback(t: torch.Tensor, r: Optional[torch.Tensor]) -> torch.Tensor:
    """v = t + residual, added in float32 and rounded to t's dtype once (the C library's sc_feedback_add)."""
    if r is None:
        return t
    return (t.float() + r.float()).to(t.dtype)


def _first_nonfinite(x: torch.Tensor, rank: int) -> int:
    """The grid words' locator of x's first NaN or infinity ((rank + 1) << 42 | kind << 40 |
    2^40 - 1 - index; kind 2 NaN, 1 infinity), 0 if none (quant.c's sc_quant_stats)."""
    bad = ~torch.isfinite(x)
    if not bool(bad.any()):
        return 0
    i = int(bad.nonzero()[0, 0])
    kind = 2 if bool(torch.isnan(x[i])) else 1
    return ((rank + 1) << 42) | (kind << 40) | ((1 << 40) - 1 - min(i, (1 << 40) - 2))


def _quantized_torch(t: torch.Tensor, bits: int, r: Optional[torch.Tensor], op: str, pg: Any) -> None:
    """The wire q8/q16 with torch ops, the integers summed by pg: quant.c's grid, rounding and one
    rounding back, bit for bit (tests/python/test_compress.py compares the two)."""
    n, rank = dist.get_world_size(pg), dist.get_rank(pg)
    h = max(0, math.ceil(math.log2(n))) if n > 1 else 0
    m = bits - 1 - h
    if m < 1:
        raise ValueError("schedc.torch: wire q%d cannot sum %d ranks: %d - 1 - ceil(log2 %d) = %d bits of magnitude "
                         "(at least 1)" % (bits, n, bits, n, m))
    v = _feedback(t, r)
    x = v.float().reshape(-1)
    words = torch.tensor([_NONE, _first_nonfinite(x, rank)], dtype=torch.int64)
    if x.numel() and not words[1]:
        A = float(x.abs().max())
        if A > 0:
            E = math.frexp(A)[1] - 1  # floor(log2 A)
            words[0] = E + int(A >= math.ldexp(1.0, E + 1) - math.ldexp(1.0, E - m))
    words = words.to(t.device)
    dist.all_reduce(words, op=dist.ReduceOp.MAX, group=pg)
    w0, w1 = int(words[0]), int(words[1])
    if w1:
        kind = "NaN" if (w1 >> 40) & 3 == 2 else "an infinity"
        raise ValueError("schedc.torch: wire q%d: the bucket of rank %d holds %s at element %d (a quantized sum takes "
                         "finite values only); nothing was reduced" % (bits, (w1 >> 42) - 1, kind,
                                                                       (1 << 40) - 1 - (w1 & ((1 << 40) - 1))))
    g = 0 if w0 == _NONE else w0 + 1 - m
    q = torch.round(x.double() * math.ldexp(1.0, -g))  # exact product; round half to even
    qi = q.to(torch.int8 if bits == 8 else torch.int32)  # NCCL and gloo have no 16-bit integer sum
    dist.all_reduce(qi, op=dist.ReduceOp.SUM, group=pg)  # integers: exact in any order
    S = qi.double()
    if op == "sum":
        y = (S * math.ldexp(1.0, g)).float()  # exact, rounded to float once (then to f16/bf16 once)
    elif t.dtype == torch.float32:
        y = (S / n * math.ldexp(1.0, g)).float()  # quant.c's avgs_f32, the same double operations
    else:  # f16/bf16: rounded to f32 to odd, then once to the type (quant.c's avgs_odd)
        d = S / n * math.ldexp(1.0, g)
        f = d.float()
        inexact = f.double() != d
        away = f.double().abs() > d.abs()
        b = f.view(torch.int32)
        b = torch.where(inexact, (b - away.to(torch.int32)) | 1, b)
        y = b.view(torch.float32)
    if r is not None:  # v - q 2^g: a value of the type, exactly
        r.copy_((x.double() - q * math.ldexp(1.0, g)).float().to(t.dtype).view_as(r))
    t.copy_(y.to(t.dtype).view_as(t))


def _topk_torch(t: torch.Tensor, frac: float, r: Optional[torch.Tensor], op: str, pg: Any) -> None:
    """Top-k with torch ops over pg: each rank's k largest magnitudes (a stable sort: ties by index),
    gathered, summed in rank order in float32 (index_add_ of unique indices per rank)."""
    n = dist.get_world_size(pg)
    v = _feedback(t, r)
    x = v.float().reshape(-1)
    count = x.numel()
    k = min(count, math.ceil(frac * count))
    order = torch.sort(x.abs(), descending=True, stable=True).indices[:k]
    idx = torch.sort(order).values
    vals = x[idx]
    il = [torch.empty(k, dtype=torch.int64, device=t.device) for _ in range(n)]
    vl = [torch.empty(k, dtype=torch.float32, device=t.device) for _ in range(n)]
    dist.all_gather(il, idx.contiguous(), group=pg)  # the list form: every backend and torch version has it
    dist.all_gather(vl, vals.contiguous(), group=pg)
    all_idx, all_vals = torch.cat(il), torch.cat(vl)
    bad = ~torch.isfinite(all_vals)
    if bool(bad.any()):
        i = int(bad.nonzero()[0, 0])
        raise ValueError("schedc.torch: topk: the bucket of rank %d holds %s at element %d (a top-k sum takes finite "
                         "values only); nothing was written" % (i // k, "NaN" if bool(torch.isnan(all_vals[i]))
                                                                 else "an infinity", int(all_idx[i])))
    acc = torch.zeros(count, dtype=torch.float32, device=t.device)
    for q in range(n):
        acc.index_add_(0, all_idx[q * k:(q + 1) * k], all_vals[q * k:(q + 1) * k])
    if op == "avg":
        acc = acc / n
    if r is not None:
        e = v.reshape(-1).clone()
        e[idx] = 0
        r.copy_(e.view_as(r))
    t.copy_(acc.to(t.dtype).view_as(t))


# ---- the schedc backend's all_reduce of a sparse COO tensor -------------------------------------------
def _sparse_allreduce(pg: Any, t: torch.Tensor, op: str) -> None:
    """``dist.all_reduce`` of a sparse COO tensor on a schedc group (as gloo's: SUM only): every rank's
    coalesced indices and values gathered through schedc (padded to the largest count), then summed
    in rank order — each rank's part coalesced, added to the running sum, coalesced — so every rank
    runs the same operations on the same bits and ends with the same tensor, written into ``t``."""
    if op != "sum":
        raise RuntimeError("schedc backend: all_reduce of a sparse tensor takes ReduceOp.SUM (as gloo), not %s"
                           % op.upper())
    c = t.coalesce()
    idx, val = c._indices(), c._values()
    n, sd, nnz = pg._n, idx.shape[0], idx.shape[1]
    counts = torch.zeros(n, dtype=torch.int64)
    pg.comm.allgather(torch.tensor([nnz], dtype=torch.int64), output=counts)
    mx = int(counts.max()) if n else 0
    ip = torch.zeros((sd, mx), dtype=torch.int64)
    ip[:, :nnz] = idx
    vp = torch.zeros((mx,) + tuple(val.shape[1:]), dtype=val.dtype)
    vp[:nnz] = val
    ia = torch.empty(n * sd * mx, dtype=torch.int64)
    va = torch.empty((n * mx,) + tuple(val.shape[1:]), dtype=val.dtype)
    if mx:
        pg._ag(ia, ip.reshape(-1), "all_reduce (sparse indices)")
        pg._ag(va.reshape(-1), vp.reshape(-1).contiguous(), "all_reduce (sparse values)")
    total: Optional[torch.Tensor] = None
    for q in range(n):
        cq = int(counts[q])
        part = torch.sparse_coo_tensor(ia[q * sd * mx:(q + 1) * sd * mx].view(sd, mx)[:, :cq],
                                       va[q * mx:q * mx + cq], t.shape).coalesce()
        total = part if total is None else (total + part).coalesce()
    assert total is not None
    t.copy_(total)

