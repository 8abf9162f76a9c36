# schedc — Python binding of libschedc (ctypes): verified plans, and communicators whose
# collectives give the bits the plan's proven reduction trees define. Nothing the C library does
# is re-implemented here; this module converts arguments and raises schedc.Error on failure.
"""Deterministic collective communication: a thin ctypes binding over libschedc.

``Plan`` loads and verifies a schedule (a shipped one by name, e.g. ``"direct"``), ``Comm`` is one
rank's communicator; ``schedc.torch`` bootstraps one inside a ``torch.distributed`` job and adds a
DDP communication hook and canonical micro-batch gradient accumulation (docs/python.md).
"""
from __future__ import annotations

import atexit
import ctypes
import operator
import threading
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from . import _lib
from ._lib import lib

__all__ = ["Error", "Plan", "PlanInfo", "check", "Comm", "unique_id", "uid_net", "digest", "canonical_plan", "DTYPES", "OPS",
           "EXACT_DTYPES"]
__version__ = "0.1.0"

DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64")
OPS = ("sum", "prod", "min", "max", "avg")


class Error(RuntimeError):
    """A failed libschedc call: ``status`` is the status name (``"SCHEDC_EMISMATCH"``), ``code`` its
    value, ``message`` schedc_errmsg() (verifier rejections: one diagnostic per line)."""

    def __init__(self, code: int, message: str, what: str = "") -> None:
        self.code = code
        self.status = _lib.STATUS_NAMES[code] if 0 <= code < len(_lib.STATUS_NAMES) else "SCHEDC_%d" % code
        self.message = message
        s = lib.schedc_status_str(code)
        head = "%s: %s (%s)" % (what, self.status, s.decode() if s else "?") if what else \
            "%s (%s)" % (self.status, s.decode() if s else "?")
        super().__init__(head + (": " + message if message else ""))


def _check(st: int, what: str) -> None:
    if st != 0:
        raise Error(st, _lib.errmsg(), what)


def _parse_op(op: str) -> int:
    v = ctypes.c_int()
    if not isinstance(op, str):
        raise TypeError("schedc: op must be a string (%s), not %r" % (", ".join(OPS), op))
    _check(lib.schedc_op_parse(op.encode(), ctypes.byref(v)), "op")
    return v.value


# exact mode (docs/determinism.md "Exact mode"): sum and avg of f32, f16, bf16 on one fixed-point
# grid shared by all ranks, so every plan and rank layout gives the same bits
EXACT_DTYPES = (0, 2, 3)  # f32, f16, bf16


def _exact_op(op: str, dtype: int, what: str) -> int:
    """The C op of ``op`` with exact=True (SCHEDC_SUM_EXACT / SCHEDC_AVG_EXACT), refused here for
    another op or dtype: before any rank waits, the same answer on every rank."""
    if op not in ("sum", "avg"):
        raise ValueError("schedc.%s: exact=True takes op 'sum' or 'avg', not %r" % (what, op))
    if dtype not in EXACT_DTYPES:
        raise TypeError("schedc.%s: exact=True takes float32, float16 or bfloat16 data, not %s"
                        % (what, DTYPES[dtype] if 0 <= dtype < len(DTYPES) else dtype))
    return _parse_op(op + "_exact")


@dataclass(frozen=True)
class PlanInfo:
    """What a plan is (schedc_plan_info)."""
    name: str
    source: str
    collective: str
    nranks: int
    nnodes: int
    nchunks: int
    root: int
    nsteps: int
    ntransfers: int
    canonical: bool
    hash: int
    max_sent: float
    max_recv: float


def _load_opts(ranks: int, nodes: Optional[int], defines: Optional[Union[Mapping[str, Any], Sequence[str]]],
               keep: list) -> _lib.LoadOpts:
    o = _lib.LoadOpts()
    o.size = ctypes.sizeof(_lib.LoadOpts)
    o.nranks = int(ranks)
    o.nnodes = int(nodes or 0)
    if defines:
        items = ["%s=%s" % (k, v) for k, v in defines.items()] if isinstance(defines, Mapping) else list(defines)
        arr = (ctypes.c_char_p * len(items))(*[s.encode() for s in items])
        keep.append(arr)
        o.defines = ctypes.cast(arr, ctypes.POINTER(ctypes.c_char_p))
        o.ndefines = len(items)
    return o


class Plan:
    """A verified schedule (immutable; shareable across threads).

    ``Plan(path_or_name, ranks=N, nodes=None, defines=None)``: a schedule script or a plan file;
    a bare name ("ring", "direct", "tree", ...) is looked up by the library among the shipped and
    installed schedules. ``defines`` is a dict (or "k=v" strings): the script's ``params``.
    Raises ``schedc.Error`` (SCHEDC_ESCRIPT, SCHEDC_EVERIFY with the diagnostics, SCHEDC_EIO ...).
    """

    def __init__(self, path_or_name: str, ranks: int = 0, nodes: Optional[int] = None,
                 defines: Optional[Union[Mapping[str, Any], Sequence[str]]] = None) -> None:
        self._p = ctypes.c_void_p()
        keep: list = []
        o = _load_opts(ranks, nodes, defines, keep)
        _check(lib.schedc_plan_open(str(path_or_name).encode(), ctypes.byref(o), ctypes.byref(self._p)),
               "Plan(%r)" % (path_or_name,))
        self._info: Optional[PlanInfo] = None

    @property
    def handle(self) -> int:
        """The schedc_plan* as an integer (for other ctypes code)."""
        return self._p.value or 0

    def _h(self) -> ctypes.c_void_p:
        # NULL means "no plan" to the C calls (the default plan, or EINVAL with a misleading message)
        if not self._p:
            raise ValueError("schedc.Plan: plan is closed")
        return self._p

    @property
    def info(self) -> PlanInfo:
        """schedc_plan_get_info as a PlanInfo."""
        if self._info is None:
            i = _lib.PlanInfoC()
            i.size = ctypes.sizeof(_lib.PlanInfoC)
            _check(lib.schedc_plan_get_info(self._h(), ctypes.byref(i)), "Plan.info")
            self._info = PlanInfo((i.name or b"").decode(), (i.source or b"").decode(),
                                  _lib.COLLECTIVES[i.collective], i.nranks, i.nnodes, i.nchunks, i.root, i.nsteps,
                                  i.ntransfers, bool(i.canonical), i.hash, i.max_sent, i.max_recv)
        return self._info

    def order(self, chunk: int, rank: int) -> str:
        """The proven reduction tree of ``chunk`` on ``rank``, e.g. "(((r1+r2)+r3)+r0)"; "-" where the
        plan leaves that chunk unspecified on that rank."""
        n = lib.schedc_plan_order(self._h(), int(chunk), int(rank), None, 0)
        if n < 0:
            raise Error(1, _lib.errmsg() or "chunk %d / rank %d out of range" % (chunk, rank), "Plan.order")
        buf = ctypes.create_string_buffer(n + 1)
        lib.schedc_plan_order(self._p, int(chunk), int(rank), buf, n + 1)
        return buf.value.decode()

    def chunk_holder(self, chunk: int) -> int:
        """The rank whose tree defines ``chunk`` (owner / root / lowest holder), or -1."""
        return int(lib.schedc_plan_chunk_holder(self._h(), int(chunk)))

    def save(self, path: str) -> None:
        """Write a versioned plan file (complete or absent)."""
        _check(lib.schedc_plan_save(self._h(), str(path).encode()), "Plan.save")

    def close(self) -> None:
        """Free the plan now (the communicators must no longer use it)."""
        if self._p:
            lib.schedc_plan_free(self._p)
            self._p = ctypes.c_void_p()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        if not self._p:
            return "schedc.Plan(closed)"
        i = self.info
        return "schedc.Plan(%r, %s, ranks=%d, chunks=%d, canonical=%s)" % (i.name, i.collective, i.nranks,
                                                                          i.nchunks, i.canonical)


def check(path_or_name: str, ranks: int = 0, nodes: Optional[int] = None,
          defines: Optional[Union[Mapping[str, Any], Sequence[str]]] = None, canonical: bool = False) -> PlanInfo:
    """Verify a schedule as ``schedc check`` does: returns its PlanInfo, or raises schedc.Error
    (SCHEDC_EVERIFY: ``.message`` lists the diagnostics). ``canonical=True`` also demands that the
    plan is proven canonical (ValueError otherwise)."""
    p = Plan(path_or_name, ranks=ranks, nodes=nodes, defines=defines)
    try:
        info = p.info
    finally:
        p.close()
    if canonical and not info.canonical:
        raise ValueError("schedc.check: %s on %d ranks verifies but is not canonical (declare order=canonical)"
                         % (path_or_name, info.nranks))
    return info


def canonical_plan(ranks: int, collective: str = "allreduce", root: int = 0) -> Plan:
    """A shipped plan proven canonical for any rank count: direct.lua -D order=canonical (allreduce,
    reduce_scatter, reduce with ``root``). Its sums are the balanced tree over ranks, whatever the
    buffer layout."""
    d = {"order": "canonical", "collective": collective}
    if collective == "reduce":
        d["root"] = int(root)
    return Plan("direct", ranks=ranks, defines=d)


def _uid(uid: bytes, what: str, maker: str) -> Any:
    """uid (16 bytes) as the C struct schedc_uid; ValueError naming its maker otherwise."""
    if len(uid) != 16:
        raise ValueError("schedc.%s: uid must be 16 bytes (%s), got %d" % (what, maker, len(uid)))
    u = _lib.Uid()
    ctypes.memmove(u.bytes, bytes(uid), 16)
    return u


def uid_net() -> bytes:
    """16 bytes from schedc_uid_net: a net job id carrying this host's address and a port this
    process now listens on, for Comm.net(uid=...); rank 0 of the job must be this process."""
    u = _lib.Uid()
    _check(lib.schedc_uid_net(ctypes.byref(u)), "uid_net")
    return bytes(u.bytes)


def unique_id() -> bytes:
    """16 random bytes from schedc_unique_id (getrandom): a job id for Comm.shm(uid=...)."""
    u = _lib.Uid()
    _check(lib.schedc_unique_id(ctypes.byref(u)), "unique_id")
    return bytes(u.bytes)


# ---- buffers --------------------------------------------------------------------------------
_TORCH_DTYPES: Dict[str, int] = {"float32": 0, "float64": 1, "float16": 2, "bfloat16": 3, "int32": 4, "int64": 5}
_FMT_DTYPES = {("f", 4): 0, ("d", 8): 1, ("e", 2): 2, ("i", 4): 4, ("l", 4): 4, ("q", 8): 5, ("l", 8): 5,
               ("n", 8): 5}
_DTYPE_FMT = {0: "f", 1: "d", 2: "e", 4: "i", 5: "q"}
_ESIZE = dict(enumerate(_lib.DTYPE_SIZES))  # checked against the library at import (_lib.check_abi)


# __cuda_array_interface__ type strings (little-endian; "|" where the size makes order moot)
_CAI_DTYPES = {"f4": 0, "f8": 1, "f2": 2, "i4": 4, "i8": 5}


class _Buf:
    """A contiguous, writable buffer: address, element count, schedc dtype, and what keeps it
    alive while C writes into it. ``kind`` "cuda": device memory (a CUDA tensor or an object with
    ``__cuda_array_interface__``), with its ``device`` (None: unknown) and the ``stream`` the data
    is ordered on (a CUstream handle; None: none given)."""
    __slots__ = ("ptr", "count", "dtype", "obj", "keep", "kind", "device", "stream")

    def __init__(self, obj: Any, what: str) -> None:
        self.obj = obj
        self.keep: Any = None
        self.device: Optional[int] = None
        self.stream: Optional[int] = None
        if _is_torch(obj):
            name = str(obj.dtype).replace("torch.", "")
            if name not in _TORCH_DTYPES:
                raise TypeError("schedc.%s: tensor dtype %s is not supported (float32, float64, float16, bfloat16, "
                                "int32, int64)" % (what, obj.dtype))
            if obj.device.type not in ("cpu", "cuda"):
                raise TypeError("schedc.%s: tensor on %s: schedc takes CPU and CUDA tensors" % (what, obj.device))
            if not obj.is_contiguous():
                raise ValueError("schedc.%s: tensor is not contiguous (call .contiguous() and copy back)" % what)
            if obj.requires_grad:  # written through a raw pointer: autograd would not know
                raise ValueError("schedc.%s: tensor requires grad; pass tensor.detach() or .grad" % what)
            self.dtype = _TORCH_DTYPES[name]
            self.count = obj.numel()
            self.ptr = obj.data_ptr()
            self.kind = "torch"
            if obj.device.type == "cuda":
                import torch
                self.kind = "cuda"
                self.device = obj.device.index if obj.device.index is not None else torch.cuda.current_device()
                self.stream = int(torch.cuda.current_stream(obj.device).cuda_stream)  # torch's current stream
            return
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            self._device_buffer(cai, what)
            return
        try:
            mv = memoryview(obj)
        except TypeError:
            raise TypeError("schedc.%s: expected a torch tensor or a buffer-protocol object (numpy array, "
                            "array.array, ...), not %s" % (what, type(obj).__name__)) from None
        if mv.readonly:
            raise ValueError("schedc.%s: buffer is read-only" % what)
        if not mv.c_contiguous:
            raise ValueError("schedc.%s: buffer is not contiguous" % what)
        fmt = mv.format.lstrip("@=<")
        if mv.format.startswith((">", "!")) or (fmt, mv.itemsize) not in _FMT_DTYPES:
            raise TypeError("schedc.%s: buffer format %r (%d-byte items) is not supported: f32, f64, f16, i32, i64 "
                            "in native byte order" % (what, mv.format, mv.itemsize))
        self.dtype = _FMT_DTYPES[(fmt, mv.itemsize)]
        self.count = mv.nbytes // mv.itemsize
        if mv.nbytes:
            cbuf = (ctypes.c_char * mv.nbytes).from_buffer(mv)
            self.ptr = ctypes.addressof(cbuf)
            self.keep = (mv, cbuf)
        else:
            self.ptr = 0
            self.keep = mv
        self.kind = "buffer"

    def _device_buffer(self, cai: Any, what: str) -> None:
        """An object with ``__cuda_array_interface__`` (CuPy, Numba, ...): its pointer, type, shape and
        stream; the device from its ``device.id`` when it has one."""
        # The interface is whatever an arbitrary object hands over, and what it says becomes a device
        # pointer and a size_t count in C: every field is checked here, each failure naming it (a
        # negative or wrapped count, a bad pointer or stream handle would crash the process or fault
        # on the device, not raise).
        def bad(msg: str, exc: type = ValueError) -> Exception:
            return exc("schedc.%s: __cuda_array_interface__ %s" % (what, msg))

        if not isinstance(cai, Mapping):
            raise bad("must be a dict, not %s" % type(cai).__name__, TypeError)
        missing = [k for k in ("data", "shape", "typestr", "version") if k not in cai]
        if missing:
            raise bad("has no %s (required: data, shape, typestr, version)" % ", ".join(repr(k) for k in missing))
        if _index(cai["version"]) is None:
            raise bad("'version' must be an integer, not %r" % (cai["version"],), TypeError)
        data = cai["data"]
        if not isinstance(data, (tuple, list)) or len(data) != 2:
            raise bad("'data' must be a (pointer, read_only) pair, not %r" % (data,), TypeError)
        ptr, readonly = data
        if readonly:
            raise ValueError("schedc.%s: device buffer is read-only" % what)
        ts = cai["typestr"]
        if not isinstance(ts, str) or ts[:1] not in ("<", "|") or ts[1:] not in _CAI_DTYPES:
            raise TypeError("schedc.%s: device buffer type %r is not supported: <f4, <f8, <f2, <i4, <i8" % (what, ts))
        shape = cai["shape"]
        if not isinstance(shape, (tuple, list)) or any(_index(x) is None or _index(x) < 0 for x in shape):
            raise bad("'shape' must be a tuple of non-negative integers, not %r" % (shape,))
        shape = tuple(_index(x) for x in shape)
        self.dtype = _CAI_DTYPES[ts[1:]]
        self.count = 1
        for x in shape:
            self.count *= x
        if self.count * _ESIZE[self.dtype] >= 2 ** 63:
            raise bad("'shape' %r is larger than any device memory" % (shape,))
        p = 0 if ptr is None else _index(ptr)
        if p is None or not 0 <= p < 2 ** 64:
            raise bad("data pointer must be an integer address, not %r" % (ptr,), TypeError)
        if p == 0 and self.count:
            raise bad("data pointer is %r for a buffer of %d elements" % (ptr, self.count))
        strides = cai.get("strides")
        if strides is not None:
            if not isinstance(strides, (tuple, list)) or len(strides) != len(shape) or \
                    any(_index(x) is None for x in strides):
                raise bad("'strides' must be None or %d integers (one per dimension of shape %r), not %r"
                          % (len(shape), shape, strides))
            want, step = [], _ESIZE[self.dtype]
            for x in reversed(shape):
                want.append(step)
                step *= x
            if tuple(strides) != tuple(reversed(want)) and self.count > 1:
                raise ValueError("schedc.%s: device buffer is not contiguous" % what)
        stream = cai.get("stream")
        # version 3: None (no ordering), 1 (legacy default stream), 2 (per-thread default) or a
        # CUstream handle; 0 is disallowed as ambiguous between those
        if stream is not None and (_index(stream) is None or not 0 < _index(stream) < 2 ** 64):
            raise bad("'stream' must be None or a CUstream handle (1: legacy default, 2: per-thread default; "
                      "0 is not allowed), not %r" % (stream,), TypeError)
        dev = getattr(getattr(self.obj, "device", None), "id", None)
        if dev is not None and (_index(dev) is None or _index(dev) < 0):
            raise TypeError("schedc.%s: the device buffer's device.id must be a CUDA device number, not %r"
                            % (what, dev))
        self.ptr = p
        self.stream = _index(stream) if stream is not None else None
        self.device = _index(dev) if dev is not None else None
        self.kind = "cuda"

    def new(self, count: int, what: str) -> "_Buf":
        """An empty buffer of the same kind and dtype with ``count`` elements."""
        if self.kind == "torch" or (self.kind == "cuda" and _is_torch(self.obj)):
            return _Buf(self.obj.new_empty(count), "alloc")
        if self.kind == "cuda":
            raise ValueError("schedc.%s: give output= for a device buffer that is not a torch tensor" % what)
        if type(self.obj).__module__ == "numpy":
            import numpy as np
            return _Buf(np.empty(count, dtype=self.obj.dtype), "alloc")
        return _Buf(memoryview(bytearray(count * _ESIZE[self.dtype])).cast(_DTYPE_FMT[self.dtype]), "alloc")


def _index(x: Any) -> Optional[int]:
    """``x`` as an int if it is one (int, numpy integer; not bool, float or str), else None."""
    if isinstance(x, bool):
        return None
    try:
        return operator.index(x)
    except TypeError:
        return None


def _is_torch(obj: Any) -> bool:
    t = type(obj)
    return t.__module__.startswith("torch") and hasattr(obj, "data_ptr") and hasattr(obj, "is_contiguous")


def digest(obj: Any) -> int:
    """schedc_digest of a buffer's bytes (what `schedc run` prints; equal bits, equal digest): a
    contiguous CPU tensor, or any buffer-protocol object (bytes, numpy array, ...)."""
    if _is_torch(obj):
        if obj.device.type != "cpu" or not obj.is_contiguous():
            raise ValueError("schedc.digest: tensor must be contiguous and on the CPU")
        return int(lib.schedc_digest(obj.data_ptr(), obj.numel() * obj.element_size()))
    data = memoryview(obj).tobytes()  # a copy: read-only buffers too
    return int(lib.schedc_digest(data, len(data)))


# ---- communicators --------------------------------------------------------------------------
_open_comms: "weakref.WeakSet[Comm]" = weakref.WeakSet()
_open_lock = threading.Lock()


def _comm_opts(timeout: Optional[float], plan: Optional[Plan]) -> _lib.CommOpts:
    o = _lib.CommOpts()
    o.size = ctypes.sizeof(_lib.CommOpts)
    o.timeout_s = float(timeout or 0.0)
    o.plan = plan._h().value if plan is not None else None
    return o


class Comm:
    """One rank's communicator (schedc_comm). Make it with ``schedc.torch.init_comm()``,
    ``Comm.from_env()``, ``Comm.shm(rank, nranks, uid=...)`` or ``Comm.mpi()``.

    Collectives work in place on a contiguous CPU torch tensor (float32, float64, float16,
    bfloat16, int32, int64) or a writable buffer-protocol object (numpy array, array.array), or on
    device memory: a CUDA tensor (on torch's current stream) or a ``__cuda_array_interface__``
    object, through a cuda communicator over this one made at the first such call. They
    must be called by every rank in the same order with matching arguments: a mismatch (another
    size, dtype, op, plan) raises schedc.Error SCHEDC_EMISMATCH on every rank instead of hanging.
    A dead peer raises SCHEDC_EPEER / SCHEDC_ETIMEOUT (the communicator is then broken).
    Calls from several threads are serialised by a lock (each C call holds it), so a DDP hook's
    background thread and the main thread may share one communicator; the *order* of the calls
    must still be the same on every rank. ``close()`` (or ``with``) frees it (after the call in
    flight, if any); any still open are closed at interpreter exit, which removes their
    shared-memory segments.
    """

    def __init__(self, handle: ctypes.c_void_p, plans: Optional[list] = None, backend: str = "",
                 timeout: Optional[float] = None) -> None:
        self._c = handle
        #: how it was made: "shm", "mpi", "threads" or "env" (Comm.from_env: SCHEDC_BACKEND decides)
        self.backend = backend
        self._timeout = timeout
        # The cuda communicator over this one (schedc_comm_init_cuda_over), made by the first call
        # with a device buffer, on that buffer's device; freed before this one (it borrows it).
        self._cuda = ctypes.c_void_p()
        self._cuda_dev: Optional[int] = None
        #: the CUDA device of device buffers that do not carry theirs (a __cuda_array_interface__
        #: object without ``device.id``); torch tensors carry theirs
        self.cuda_device: Optional[int] = None
        self._plans = plans or []  # plans referenced by opts must outlive the communicator
        self._default: Dict[str, Plan] = {}
        # held by every C call on this communicator and by close(): the library allows one thread
        # at a time per communicator, and close() must not free it under a call in flight
        self._lock = threading.RLock()
        with _open_lock:
            _open_comms.add(self)

    @classmethod
    def shm(cls, rank: int, nranks: int, uid: Optional[bytes] = None, job: Optional[str] = None,
            timeout: Optional[float] = None, plan: Optional[Plan] = None) -> "Comm":
        """Processes on one host: ``uid`` (16 bytes from schedc.unique_id() on one rank, handed to
        the others; schedc_comm_init_shm_uid) or ``job`` (a name unique among running jobs)."""
        h = ctypes.c_void_p()
        o = _comm_opts(timeout, plan)
        if (uid is None) == (job is None):
            raise ValueError("schedc.Comm.shm: give exactly one of uid= and job=")
        if uid is not None:
            u = _uid(uid, "Comm.shm", "schedc.unique_id()")
            _check(lib.schedc_comm_init_shm_uid(int(rank), int(nranks), ctypes.byref(u), ctypes.byref(o),
                                                ctypes.byref(h)), "Comm.shm")
        else:
            _check(lib.schedc_comm_init_shm(int(rank), int(nranks), str(job).encode(), ctypes.byref(o),
                                            ctypes.byref(h)), "Comm.shm")
        return cls(h, [plan] if plan else None, "shm", timeout)

    @classmethod
    def net(cls, rank: int, nranks: int, uid: Optional[bytes] = None,
            allgather: Optional[Callable[[bytes], Sequence[bytes]]] = None, timeout: Optional[float] = None,
            plan: Optional[Plan] = None) -> "Comm":
        """Processes on any hosts over UCX (the net backend; no MPI launcher). Bootstrapped from
        ``uid`` (16 bytes from schedc.uid_net() on rank 0's process, handed to the others;
        schedc_comm_init_net) or ``allgather``, a function every rank calls with the same-sized
        bytes and that returns every rank's, in rank order (a torch.distributed store, a gloo
        group: schedc_comm_init_net_oob). Raises schedc.Error SCHEDC_EUNAVAIL when the library
        was built without UCX."""
        h = ctypes.c_void_p()
        o = _comm_opts(timeout, plan)
        if (uid is None) == (allgather is None):
            raise ValueError("schedc.Comm.net: give exactly one of uid= and allgather=")
        if uid is not None:
            u = _uid(uid, "Comm.net", "schedc.uid_net()")
            _check(lib.schedc_comm_init_net(int(rank), int(nranks), ctypes.byref(u), ctypes.byref(o), ctypes.byref(h)),
                   "Comm.net")
            return cls(h, [plan] if plan else None, "net", timeout)
        n = int(nranks)
        raised: List[BaseException] = []

        def gather(ctx: Any, mine: Any, all_: Any, nbytes: int) -> int:
            try:
                parts = list(allgather(ctypes.string_at(mine, nbytes)))  # type: ignore[misc]
                if len(parts) != n or any(len(p) != nbytes for p in parts):
                    raise ValueError("schedc.Comm.net: allgather returned %d parts of %s bytes for %d ranks of %d"
                                     % (len(parts), sorted(set(len(p) for p in parts)), n, nbytes))
                ctypes.memmove(all_, b"".join(bytes(p) for p in parts), nbytes * n)
                return 0
            except BaseException as e:  # an exception cannot cross the C frames: kept, raised below
                raised.append(e)
                return 1
        cb = _lib.OobAllgather(gather)
        st = lib.schedc_comm_init_net_oob(int(rank), n, cb, None, ctypes.byref(o), ctypes.byref(h))
        if st != 0 and raised:
            raise Error(st, "the allgather raised %r: %s" % (raised[0], _lib.errmsg()), "Comm.net") from raised[0]
        _check(st, "Comm.net")
        return cls(h, [plan] if plan else None, "net", timeout)

    @classmethod
    def mpi(cls, timeout: Optional[float] = None, plan: Optional[Plan] = None) -> "Comm":
        """Every process of MPI_COMM_WORLD, in its MPI rank order, on any number of hosts
        (schedc_comm_init_mpi; collective over the world). schedc calls MPI_Init if nobody has, and
        then finalizes MPI at exit. Raises schedc.Error SCHEDC_EUNAVAIL when the library was built
        without MPI, SCHEDC_EINVAL when SCHEDC_NRANKS / WORLD_SIZE disagree with the world's size."""
        h = ctypes.c_void_p()
        o = _comm_opts(timeout, plan)
        _check(lib.schedc_comm_init_mpi(None, ctypes.byref(o), ctypes.byref(h)), "Comm.mpi")
        return cls(h, [plan] if plan else None, "mpi", timeout)

    @classmethod
    def from_env(cls, timeout: Optional[float] = None) -> "Comm":
        """schedc_comm_init_env: SCHEDC_RANK/SCHEDC_NRANKS/SCHEDC_JOB (see docs/c-api.md). Inside a
        torch job prefer schedc.torch.init_comm(), which never derives the job from the
        environment (TORCHELASTIC_RUN_ID may be the literal 'none' for every job, and is then
        refused here)."""
        h = ctypes.c_void_p()
        o = _comm_opts(timeout, None)
        _check(lib.schedc_comm_init_env(ctypes.byref(o), ctypes.byref(h)), "Comm.from_env")
        return cls(h, backend="env", timeout=timeout)

    @classmethod
    def threads(cls, nranks: int, timeout: Optional[float] = None) -> "list[Comm]":
        """nranks communicators whose ranks are threads of this process (one thread per comm)."""
        arr = (ctypes.c_void_p * int(nranks))()
        o = _comm_opts(timeout, None)
        _check(lib.schedc_comm_init_threads(int(nranks), ctypes.byref(o), arr), "Comm.threads")
        return [cls(ctypes.c_void_p(arr[i]), backend="threads", timeout=timeout) for i in range(int(nranks))]

    def _h(self) -> ctypes.c_void_p:
        if not self._c:
            raise ValueError("schedc.Comm: communicator is closed")
        return self._c

    @property
    def rank(self) -> int:
        return int(lib.schedc_comm_rank(self._h()))

    @property
    def nranks(self) -> int:
        return int(lib.schedc_comm_nranks(self._h()))

    def _handle_for(self, b: _Buf, what: str) -> ctypes.c_void_p:
        """The communicator a call on ``b`` goes to: this one for host memory; for device memory the
        cuda communicator over this one (made at the first such call: collective, like every call),
        its next work put on the buffer's stream."""
        if b.kind != "cuda":
            return self._h()
        dev = b.device if b.device is not None else self.cuda_device
        if dev is None:
            raise ValueError("schedc.%s: the device buffer does not say its CUDA device: set comm.cuda_device" % what)
        if not self._cuda:
            if self.backend not in ("shm", "mpi", "net"):
                raise TypeError("schedc.%s: device buffers need a communicator from schedc.torch.init_comm, Comm.shm, "
                                "Comm.mpi or Comm.net (its ranks carry the CUDA rendezvous); this one is %r"
                                % (what, self.backend))
            h = ctypes.c_void_p()
            o = _comm_opts(self._timeout, None)
            _check(lib.schedc_comm_init_cuda_over(self._h(), int(dev), ctypes.byref(o), ctypes.byref(h)),
                   what + " (cuda communicator)")
            self._cuda, self._cuda_dev = h, int(dev)
        elif int(dev) != self._cuda_dev:
            raise ValueError("schedc.%s: this rank's device buffers are on CUDA device %d, this one on device %d"
                             % (what, self._cuda_dev, dev))
        _check(lib.schedc_cuda_set_stream(self._cuda, ctypes.c_void_p(b.stream) if b.stream else None), what)
        return self._cuda

    def synchronize(self) -> None:
        """Wait for this rank's collectives on device buffers (they are stream-ordered: a call returns
        once its work is enqueued on the buffer's stream, torch's current stream for a CUDA tensor);
        raises schedc.Error if a kernel failed (schedc_cuda_sync). No-op without device calls."""
        self._h()  # closed: say so (close() freed the cuda communicator too; nothing left to wait for)
        with self._lock:
            if self._cuda:
                _check(lib.schedc_cuda_sync(self._cuda), "synchronize")

    @staticmethod
    def _plan(plan: Optional[Plan]) -> Optional[int]:
        if plan is None:
            return None
        if not isinstance(plan, Plan):
            raise TypeError("schedc: plan must be a schedc.Plan, not %s" % type(plan).__name__)
        return plan._h().value  # a closed plan's NULL would silently mean "the default plan"

    def allreduce(self, tensor: Any, op: str = "sum", plan: Optional[Plan] = None, exact: bool = False) -> Any:
        """Reduce ``tensor`` across ranks in place (op: sum, prod, min, max, avg = sum then one
        division); every rank gets the plan's proven bits. ``exact=True`` (sum, avg of float32,
        float16, bfloat16): exact mode, the same bits for every plan and rank layout (the exact sum
        of the inputs on one grid, rounded once: docs/determinism.md). Returns ``tensor``."""
        b = _Buf(tensor, "allreduce")
        o = _exact_op(op, b.dtype, "allreduce") if exact else _parse_op(op)
        with self._lock:
            h = self._handle_for(b, "allreduce")
            _check(lib.schedc_allreduce(b.ptr, b.ptr, b.count, b.dtype, o, h, self._plan(plan)), "allreduce")
        return tensor

    def reduce(self, tensor: Any, root: int = 0, op: str = "sum", plan: Optional[Plan] = None,
               exact: bool = False) -> Any:
        """Reduce ``tensor`` across ranks into ``root``'s tensor, in place (schedc_reduce); the other
        ranks' tensors are left as they were. A plan must be a reduce plan for this root
        (``canonical_plan(n, "reduce", root)``). ``exact=True``: as for allreduce. Returns ``tensor``."""
        b = _Buf(tensor, "reduce")
        o = _exact_op(op, b.dtype, "reduce") if exact else _parse_op(op)
        with self._lock:
            h = self._handle_for(b, "reduce")
            _check(lib.schedc_reduce(b.ptr, b.ptr, b.count, b.dtype, o, int(root), h, self._plan(plan)), "reduce")
        return tensor

    def reduce_scatter(self, tensor: Any, output: Any = None, op: str = "sum", plan: Optional[Plan] = None,
                       exact: bool = False) -> Any:
        """``tensor`` holds nranks equal blocks; block ``rank`` of the reduction goes to ``output``
        (count/nranks elements, same dtype) or, without one, into ``tensor``'s own block in place.
        ``exact=True``: as for allreduce (the grid is the whole input's). Returns the output (or that
        block's view)."""
        b = _Buf(tensor, "reduce_scatter")
        n = self.nranks
        if b.count % n:
            raise ValueError("schedc.reduce_scatter: %d elements do not split into %d equal blocks" % (b.count, n))
        k = b.count // n
        o = _exact_op(op, b.dtype, "reduce_scatter") if exact else _parse_op(op)
        out = _Buf(output, "reduce_scatter") if output is not None else b.new(k, "reduce_scatter")
        if out.dtype != b.dtype or out.count != k:
            raise ValueError("schedc.reduce_scatter: output must have %d elements of the input's dtype" % k)
        _same_memory(b, out, "reduce_scatter")
        with self._lock:
            _check(lib.schedc_reduce_scatter(b.ptr, out.ptr, k, b.dtype, o, self._handle_for(b, "reduce_scatter"),
                                             self._plan(plan)), "reduce_scatter")
        if output is not None:
            return output
        if b.kind == "cuda":  # a torch tensor: the copy is stream-ordered after the collective
            _block(tensor, self.rank, k, b.dtype).copy_(out.obj)
            return _block(tensor, self.rank, k, b.dtype)
        es = _ESIZE[b.dtype]
        if k:
            ctypes.memmove(b.ptr + self.rank * k * es, out.ptr, k * es)
        return _block(tensor, self.rank, k, b.dtype)

    def allgather(self, tensor: Any, output: Any = None, plan: Optional[Plan] = None) -> Any:
        """Without ``output``: ``tensor`` holds nranks equal blocks, this rank's filled; in place every
        block r becomes rank r's. With ``output`` (nranks times tensor's size): tensor is this rank's
        block. Returns the gathered buffer."""
        b = _Buf(tensor, "allgather")
        n = self.nranks
        if output is None:
            if b.count % n:
                raise ValueError("schedc.allgather: %d elements do not split into %d equal blocks" % (b.count, n))
            k = b.count // n
            es = _ESIZE[b.dtype]
            with self._lock:
                _check(lib.schedc_allgather((b.ptr + self.rank * k * es) if k else b.ptr, b.ptr, k, b.dtype,
                                            self._handle_for(b, "allgather"), self._plan(plan)), "allgather")
            return tensor
        out = _Buf(output, "allgather")
        if out.dtype != b.dtype or out.count != b.count * n:
            raise ValueError("schedc.allgather: output must have %d elements of the input's dtype" % (b.count * n))
        _same_memory(b, out, "allgather")
        with self._lock:
            _check(lib.schedc_allgather(b.ptr, out.ptr, b.count, b.dtype, self._handle_for(b, "allgather"),
                                        self._plan(plan)), "allgather")
        return output

    def broadcast(self, tensor: Any, root: int = 0, plan: Optional[Plan] = None) -> Any:
        """``root``'s tensor to every rank's, in place. Returns ``tensor``."""
        b = _Buf(tensor, "broadcast")
        with self._lock:
            _check(lib.schedc_broadcast(b.ptr, b.ptr, b.count, b.dtype, int(root), self._handle_for(b, "broadcast"),
                                        self._plan(plan)), "broadcast")
        return tensor

    def close(self, wait: Optional[float] = None) -> None:
        """Free the communicator (removes its shared-memory segments); idempotent. Waits for a call
        another thread has in flight on it; ``wait`` (seconds) bounds that wait: past it the
        communicator is left open (returns False) rather than freed under the call."""
        if not self._lock.acquire(timeout=-1 if wait is None else max(0.0, wait)):
            return False
        try:
            if self._cuda:  # it borrows this one: first
                lib.schedc_comm_free(self._cuda)
                self._cuda = ctypes.c_void_p()
            if self._c:
                lib.schedc_comm_free(self._c)
                self._c = ctypes.c_void_p()
        finally:
            self._lock.release()
        return True

    def __enter__(self) -> "Comm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        if not self._c:
            return "schedc.Comm(closed)"
        return "schedc.Comm(rank=%d, nranks=%d, backend=%r)" % (self.rank, self.nranks, self.backend)


def _same_memory(a: _Buf, b: _Buf, what: str) -> None:
    if (a.kind == "cuda") != (b.kind == "cuda"):
        raise ValueError("schedc.%s: input and output must both be host memory or both device memory" % what)
    if a.kind == "cuda" and b.device is not None and a.device is not None and a.device != b.device:
        raise ValueError("schedc.%s: input on CUDA device %d, output on device %d" % (what, a.device, b.device))


def _block(obj: Any, r: int, k: int, dtype: int) -> Any:
    """A view of block r (k elements) of a contiguous buffer."""
    if _is_torch(obj):
        return obj.view(-1)[r * k:(r + 1) * k]
    if type(obj).__module__ == "numpy":
        return obj.reshape(-1)[r * k:(r + 1) * k]
    return memoryview(obj).cast("B").cast(_DTYPE_FMT[dtype])[r * k:(r + 1) * k]


@atexit.register
def _close_all() -> None:
    # Shared-memory segments outlive a process that does not free its communicator.
    with _open_lock:
        comms = list(_open_comms)
    for c in comms:
        try:
            # a daemon thread may still be inside a call on it (a DDP hook's worker, a process
            # group's): freeing it under that call would be a use after free. Wait for the call
            # (bounded by its timeout anyway), and past 10 s leave it: the process is
            # ending, and the shm rendezvous segment was already unlinked at init.
            c.close(wait=10.0)
        except Exception:
            pass
