# communicators.py — schedc.Comm, one rank's communicator (shm, mpi, threads, from the environment,
# and the cuda communicator a device buffer brings), its collectives, unique_id() for the shm
# rendezvous, and the exit hook that frees the communicators still open.
"""Communicators: ``Comm`` and ``unique_id``."""
from __future__ import annotations

import atexit
import ctypes
import threading
import weakref
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _lib
from ._lib import lib
from .buffers import _ESIZE, _Buf, _block, _same_memory
from .errors import Error, _check
from .names import _call_opts, _exact_op, _parse_op
from .plans import Plan


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

    def allreduce(self, tensor: Any, op: str = "sum", plan: Optional[Plan] = None, exact: bool = False,
                  wire: Optional[str] = None, topk: Optional[float] = None, residual: Any = None) -> Any:
        """Reduce ``tensor`` across ranks in place (op: sum, prod, min, max, avg = sum then one
        division); every rank gets the plan's proven bits. ``exact=True`` (sum, avg of float32,
        float16, bfloat16): exact mode, the same bits for every plan and rank layout (the exact sum
        of the inputs on one grid, rounded once: docs/determinism.md). Compression
        (docs/compression.md; sum, avg of float32, float16, bfloat16 in host memory): ``wire="q8"``
        or ``"q16"`` sums 8- or 16-bit integers on one grid, ``topk=F`` sends each rank's F * count
        largest elements, summed exactly; ``residual`` (a tensor of the same dtype and size, zeros at
        first) is error feedback: added to the input and left holding what was not sent. Every
        plan and rank layout gives the same bits. Returns ``tensor``."""
        b = _Buf(tensor, "allreduce")
        co, keep = _call_opts("allreduce", b.dtype, op, wire, topk, residual, b.count)
        if co is not None and exact:
            raise ValueError("schedc.allreduce: exact=True and wire/topk/residual exclude each other")
        o = _exact_op(op, b.dtype, "allreduce") if exact else _parse_op(op)
        with self._lock:
            h = self._handle_for(b, "allreduce")
            if co is not None:
                _check(lib.schedc_allreduce_v2(b.ptr, b.ptr, b.count, b.dtype, o, h, self._plan(plan),
                                               ctypes.byref(co)), "allreduce")
            else:
                _check(lib.schedc_allreduce(b.ptr, b.ptr, b.count, b.dtype, o, h, self._plan(plan)), "allreduce")
        del keep
        return tensor

    def reduce(self, tensor: Any, root: int = 0, op: str = "sum", plan: Optional[Plan] = None,
               exact: bool = False, wire: Optional[str] = None, residual: Any = None) -> Any:
        """Reduce ``tensor`` across ranks into ``root``'s tensor, in place (schedc_reduce); the other
        ranks' tensors are left as they were. A plan must be a reduce plan for this root
        (``canonical_plan(n, "reduce", root)``). ``exact=True``, ``wire``, ``residual``: as for
        allreduce. Returns ``tensor``."""
        b = _Buf(tensor, "reduce")
        co, keep = _call_opts("reduce", b.dtype, op, wire, None, residual, b.count)
        if co is not None and exact:
            raise ValueError("schedc.reduce: exact=True and wire/residual exclude each other")
        o = _exact_op(op, b.dtype, "reduce") if exact else _parse_op(op)
        with self._lock:
            h = self._handle_for(b, "reduce")
            if co is not None:
                _check(lib.schedc_reduce_v2(b.ptr, b.ptr, b.count, b.dtype, o, int(root), h, self._plan(plan),
                                            ctypes.byref(co)), "reduce")
            else:
                _check(lib.schedc_reduce(b.ptr, b.ptr, b.count, b.dtype, o, int(root), h, self._plan(plan)), "reduce")
        del keep
        return tensor

    def reduce_scatter(self, tensor: Any, output: Any = None, op: str = "sum", plan: Optional[Plan] = None,
                       exact: bool = False, wire: Optional[str] = None, residual: Any = None) -> Any:
        """``tensor`` holds nranks equal blocks; block ``rank`` of the reduction goes to ``output``
        (count/nranks elements, same dtype) or, without one, into ``tensor``'s own block in place.
        ``exact=True``, ``wire``, ``residual`` (the input's size): as for allreduce (the grid is the
        whole input's). Returns the output (or that block's view)."""
        b = _Buf(tensor, "reduce_scatter")
        n = self.nranks
        if b.count % n:
            raise ValueError("schedc.reduce_scatter: %d elements do not split into %d equal blocks" % (b.count, n))
        k = b.count // n
        co, keep = _call_opts("reduce_scatter", b.dtype, op, wire, None, residual, b.count)
        if co is not None and exact:
            raise ValueError("schedc.reduce_scatter: exact=True and wire/residual exclude each other")
        o = _exact_op(op, b.dtype, "reduce_scatter") if exact else _parse_op(op)
        out = _Buf(output, "reduce_scatter") if output is not None else b.new(k, "reduce_scatter")
        if out.dtype != b.dtype or out.count != k:
            raise ValueError("schedc.reduce_scatter: output must have %d elements of the input's dtype" % k)
        _same_memory(b, out, "reduce_scatter")
        with self._lock:
            h = self._handle_for(b, "reduce_scatter")
            if co is not None:
                _check(lib.schedc_reduce_scatter_v2(b.ptr, out.ptr, k, b.dtype, o, h, self._plan(plan),
                                                    ctypes.byref(co)), "reduce_scatter")
            else:
                _check(lib.schedc_reduce_scatter(b.ptr, out.ptr, k, b.dtype, o, h, self._plan(plan)), "reduce_scatter")
        del keep
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

    def shrink(self, timeout: Optional[float] = None) -> "Comm":
        """After a call raised SCHEDC_EPEER (or SCHEDC_ETIMEOUT) because a rank died: agree with the
        other live ranks on who is still there and return a new communicator of exactly them,
        renumbered in their old order (schedc_comm_shrink; threads, shm and net backends). Every rank
        still alive calls it; each waits for the others (up to the timeout) and all get the same
        members — the agreement cannot split. ``parent_rank(r)`` maps the new ranks back. This
        communicator stays broken: close it. ``timeout``: the new one's (default: this one's).
        Raises schedc.Error SCHEDC_EPEER when this rank was left out (it did not call shrink within
        the timeout), SCHEDC_EUNAVAIL on the mpi and cuda backends (docs/recovery.md)."""
        h = ctypes.c_void_p()
        with self._lock:
            if self._cuda:  # the cuda communicator over this one is broken with it
                lib.schedc_comm_free(self._cuda)
                self._cuda = ctypes.c_void_p()
            o = None
            if timeout is not None:
                o = _comm_opts(timeout, None)
            _check(lib.schedc_comm_shrink(self._h(), ctypes.byref(o) if o is not None else None, ctypes.byref(h)),
                   "Comm.shrink")
        return Comm(h, backend=self.backend, timeout=timeout if timeout is not None else self._timeout)

    def parent_rank(self, rank: int) -> int:
        """The rank ``rank`` had in the communicator this one was shrunk from (``rank`` itself for a
        communicator made otherwise)."""
        r = int(lib.schedc_comm_parent_rank(self._h(), int(rank)))
        if r < 0:
            raise ValueError("schedc.Comm.parent_rank: rank %d out of range [0, %d)" % (rank, self.nranks))
        return r

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
