# _order.py — one op order per process group, fixed by the program, never by timing or by the
# thread that issues: ops take their place when issued; a callback registered on an op's future
# takes a place (a slot) where it is registered, and the ops it issues fill that slot, whether it
# runs at once or later in another thread. One executor thread runs the ops in that order; other
# threads complete the futures (run the callbacks), so a callback may wait for any op before it.
"""The order of a schedc process group's ops (docs/python.md, "Order of ops").

The order is a tree: the group's root sequence holds, in issue order, the ops issued outside any
callback and a *slot* per callback registered (``then`` / ``add_done_callback``) on one of the
group's futures; a slot holds, in issue order, the ops and slots of that callback. The executor
runs the tree depth first: a slot's ops after everything before it, before everything after it.
Where a callback runs (at once in the registering thread, the op being done, or later in a
completing thread) changes nothing: its ops go into its slot. The executor waits at a slot until
its callback has returned (its ops are then all known), at most the group's timeout.

What cannot have one order is refused, on every rank alike, since it is the program's doing:
a callback waiting for an op ordered after its own slot, registering a callback on such an op,
or issuing ops on another group. Ops issued from threads of the user's (or from callbacks of
futures torch makes, e.g. ``collect_all``) take their place when issued, as gloo's do.

Ownership: an ``Order`` holds no reference to its process group (the group owns it), so a group
that nobody references is freed, and its threads end (``stop``)."""
import collections
import threading
import time
import traceback
import weakref
from typing import Any, Callable, Deque, List, Optional, Tuple

import torch

__all__ = ["Order", "OrderError", "install"]


class OrderError(RuntimeError):
    """A program whose ops cannot have one order on every rank (raised on every rank)."""


_tls = threading.local()  # .ctx: [(Order, slot)] of the callbacks this thread runs, innermost last


def _ctx() -> List[Tuple["Order", "_Seq"]]:
    c = getattr(_tls, "ctx", None)
    if c is None:
        c = _tls.ctx = []
    return c


def _slot_of(order: "Order") -> Optional["_Seq"]:
    """The innermost slot of ``order`` this thread's callbacks run in, or None."""
    for o, s in reversed(getattr(_tls, "ctx", None) or ()):
        if o is order:
            return s
    return None


def _before(a: Tuple[int, ...], b: Tuple[int, ...]) -> bool:
    """Whether position a runs, completely, before position b (a neither b nor an ancestor of b)."""
    return a < b and b[:len(a)] != a


class _Seq:
    """A sequence of the order: the root or a callback's slot. ``items``: what is not yet taken
    by the executor (ops and slots), ``taken`` counts what was, so an item's index is
    ``taken + its place``; ``path``: its position in the tree (the root's is ())."""
    __slots__ = ("items", "taken", "path", "closed", "what", "cross", "__weakref__")

    def __init__(self, path: Tuple[int, ...], what: str = "", cross: bool = False) -> None:
        self.items: Deque[Any] = collections.deque()
        self.taken = 0
        self.path = path
        self.closed = False
        self.what = what
        self.cross = cross  # registered inside a callback of another group: its place is timing's

    def next_path(self) -> Tuple[int, ...]:
        return self.path + (self.taken + len(self.items),)


class _Op:
    """One op: ``fn`` runs it; ``fut`` (a torch future, made when first asked for: most ops'
    never are) gets ``result`` or ``exc``. ``done``: it ran (or failed without running);
    ``claimer``: the thread completing it; ``completed``: ``fut``, if any, is completed and the
    callbacks it ran have returned."""
    __slots__ = ("fn", "fut", "result", "stream", "what", "num", "path", "done", "exc", "claimer", "completed",
                 "__weakref__")

    def __init__(self, fn: Callable[[], Any], result: Any, stream: Any, what: str) -> None:
        self.fn: Optional[Callable[[], Any]] = fn
        self.fut: Any = None
        self.result = result
        self.stream = stream
        self.what = what
        self.num = 0
        self.path: Tuple[int, ...] = ()
        self.done = False
        self.exc: Optional[BaseException] = None
        self.claimer: Optional[int] = None
        self.completed = False


def _timed_out(msg: str) -> BaseException:
    # torch's words for a timeout (" Timed out "), as gloo's; a DistBackendError where torch has one
    import torch.distributed as dist
    return getattr(dist, "DistBackendError", RuntimeError)("schedc backend: Timed out: " + msg)


class _Pool:
    """Threads that complete a group's futures, running their callbacks: one while none is busy,
    and another whenever work waits and every thread is busy (a callback waiting for a later op
    holds its thread: the later op's completion must not queue behind it). Idle threads end."""
    IDLE_S = 2.0

    def __init__(self, name: str) -> None:
        self._name = name
        self._cond = threading.Condition(threading.Lock())
        self._q: Deque[Callable[[], Any]] = collections.deque()
        self._threads = 0
        self._busy = 0
        self._stop = False
        self._all: "weakref.WeakSet[threading.Thread]" = weakref.WeakSet()

    def post(self, fn: Callable[[], Any]) -> None:
        with self._cond:
            self._q.append(fn)
            if self._threads - self._busy < len(self._q):  # every free thread has a task already
                self._threads += 1
                t = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._all.add(t)
                t.start()
            else:
                self._cond.notify()

    def _run(self) -> None:
        _tls.completer = True
        while True:
            with self._cond:
                while not self._q:
                    if self._stop or not self._cond.wait(self.IDLE_S) and not self._q:
                        self._threads -= 1
                        return
                fn = self._q.popleft()
                self._busy += 1
            try:
                fn()
            except BaseException:  # noqa: B902 — a completion never kills the thread
                traceback.print_exc()
            finally:
                fn = None  # type: ignore[assignment]
                with self._cond:
                    self._busy -= 1

    def stop(self, timeout: Optional[float]) -> None:
        """Finish what was posted, then end the threads (each waits at most ``timeout``)."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in list(self._all):
            if t is not threading.current_thread():
                t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))


class Order:
    """A group's op order and the threads that follow it: ``issue`` places and (eventually) runs
    an op; ``reserve``/``close`` bracket a callback's slot; ``wait`` and ``complete`` are Work's.
    ``translate`` maps an op's exception to the one its future and wait() carry; ``timeout`` (s)
    bounds the executor's wait at a slot and a wait for another thread's callbacks."""

    def __init__(self, name: str, timeout: float, translate: Callable[[BaseException], BaseException]) -> None:
        self.name = name
        self.timeout = timeout if timeout > 0 else 1800.0
        self._translate = translate
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)  # the executor waits here: work, a slot closing
        self._done = threading.Condition(self._lock)  # Work.wait waits here: an op done, a future completed
        self._exec_on_busy = False                    # the executor waits for an op run inline to end
        self.root = _Seq(())
        self._stack: List[_Seq] = [self.root]  # the executor's place: the sequences it is inside
        self._count = 0                         # ops issued (their numbers, for messages)
        self._busy = False                      # an op is running (on the executor or inline)
        self._failed: Optional[BaseException] = None  # every op from now on fails with it
        self._stopping = False
        self._ran_one = False                   # the executor ran an op (SCHEDC_BIND: see issue)
        self._thread: Optional[threading.Thread] = None
        self._after: List[Callable[[], Any]] = []  # run by the executor as it ends (abort: close)
        self.pool = _Pool(name + "-cb")

    # ---- placing ------------------------------------------------------------------------------
    def _seq_for_issue(self, what: str) -> _Seq:
        ctx = getattr(_tls, "ctx", None)
        s = _slot_of(self)
        if s is None and ctx:
            raise OrderError("schedc backend: %s issued on group %s from a callback of another group's op: its place "
                             "in this group's op order would depend on when the callback runs. Issue it outside the "
                             "callback, or from a callback registered on one of this group's futures"
                             % (what, self.name))
        if s is not None and s.cross:
            raise OrderError("schedc backend: %s issued from a callback registered, inside a callback of another "
                             "group's op, on this group's future: its place in the op order would depend on timing"
                             % what)
        return self.root if s is None else s

    def issue(self, op: _Op, inline: bool) -> None:
        """Give ``op`` its place; ``inline``: run it now in this thread if it is next and nothing runs."""
        with self._lock:
            seq = self._seq_for_issue(op.what)
            self._count += 1
            op.num = self._count
            op.path = seq.next_path()
            if self._failed is not None:
                op.exc, op.done = self._failed, True
            elif self._stopping and seq is self.root:  # a callback finishing during shutdown may still issue
                op.exc, op.done = RuntimeError("schedc backend: %s on process group %s, which was shut down"
                                               % (op.what, self.name)), True
            else:
                seq.items.append(op)
                run_here = inline and self._ran_one and not self._busy and self._next_is(op)
                if run_here:
                    got = self._take()
                    assert got is op
                    self._busy = True
                else:
                    self._start()
                    self._work.notify()
                    return
        if op.done:  # failed at once
            self.complete(op)
            return
        self._run(op)
        self.complete(op)

    def _start(self) -> None:
        if self._thread is None and not self._stopping:
            self._thread = threading.Thread(target=Order._loop, args=(self,), name=self.name, daemon=True)
            self._thread.start()

    def reserve(self, anchor: Any, what: str) -> _Seq:
        """A slot for a callback registered now on a future that completes with ``anchor`` (an op,
        or the slot of the callback whose return completes it)."""
        with self._lock:
            s = _slot_of(self)
            cross = s is None and bool(getattr(_tls, "ctx", None))
            seq = self.root if s is None else s
            path = seq.next_path()
            if not _before(anchor.path, path):
                raise OrderError("schedc backend: a callback registered, from the callback of %s, on the future of %s, "
                                 "which is ordered after it: the group could only run its ops once that op is done, "
                                 "and that op only after them. Register it outside the callback"
                                 % (seq.what or "an op", _name(anchor)))
            slot = _Seq(path, "the callback registered on %s" % _name(anchor), cross or (s is not None and s.cross))
            if self._failed is None:
                seq.items.append(slot)
                self._work.notify()
            else:
                slot.closed = True
            return slot

    def close(self, slot: _Seq) -> None:
        with self._lock:
            slot.closed = True
            self._work.notify()

    # ---- the executor ---------------------------------------------------------------------------
    def _next_is(self, op: _Op) -> bool:
        st = self._stack
        while len(st) > 1 and st[-1].closed and not st[-1].items:
            st.pop()
        seq = st[-1]
        return bool(seq.items) and seq.items[0] is op

    def _take(self) -> Optional[_Op]:
        st = self._stack
        while True:
            seq = st[-1]
            if seq.items:
                it = seq.items.popleft()
                seq.taken += 1
                if type(it) is _Seq:
                    st.append(it)
                    continue
                return it
            if seq.closed and len(st) > 1:
                st.pop()
                continue
            return None

    @staticmethod
    def _loop(o: "Order") -> None:
        _tls.executor = True
        try:
            while True:
                with o._lock:
                    op = o._next_wait()
                    if op is None:
                        return
                o._run(op)
                with o._lock:
                    o._ran_one = True
                    quick = op.fut is None and op.claimer is None  # no future yet: nothing to run
                    if quick:
                        op.claimer = threading.get_ident()
                        op.completed = True
                        o._done.notify_all()
                if not quick:
                    o.pool.post(lambda op=op: o.complete(op))
                del op
        finally:
            for f in o._after:
                try:
                    f()
                except Exception:  # noqa: B902
                    traceback.print_exc()

    def _next_wait(self) -> Optional[_Op]:
        """The next op to run (taken, busy set), or None when the executor ends. Holds the lock."""
        slot_since: Optional[float] = None
        while True:
            if not self._busy:
                op = self._take()
                if op is not None:
                    self._busy = True
                    return op
            top = self._stack[-1]
            if self._stopping and (self._failed is not None or (top is self.root and not top.items)):
                return None
            if self._busy or top is self.root:
                slot_since = None
                self._exec_on_busy = self._busy
                self._work.wait()
                self._exec_on_busy = False
                continue
            # an open slot with nothing in it yet: its callback has not returned
            now = time.monotonic()
            if slot_since is None:
                slot_since = now
            left = slot_since + self.timeout - now
            if left <= 0:
                self._fail_locked(_timed_out(
                    "after %.0f s the group's op order still waits for %s to return (it waits for something that "
                    "waits for the group, or never returns): the group's later ops cannot run" % (self.timeout, top.what)))
                continue
            self._work.wait(left)

    def _run(self, op: _Op) -> None:
        """Run ``op`` in this thread (busy is set): its result or exception, then done."""
        exc: Optional[BaseException] = None
        try:
            with torch.no_grad():  # the ops write tensors that may require grad (DDP, create_graph): untracked
                if op.stream is not None:
                    with torch.cuda.stream(op.stream):
                        op.fn()  # type: ignore[misc]
                else:
                    op.fn()  # type: ignore[misc]
        except BaseException as e:  # noqa: B902 — every failure goes to wait() and the future, on every rank
            exc = self._translate(e)
        with self._lock:
            op.exc = exc
            op.done = True
            op.fn = None
            self._busy = False
            self._done.notify_all()
            if self._exec_on_busy:
                self._work.notify()

    def _fail_locked(self, exc: BaseException) -> None:
        """Every op not yet run fails with ``exc``, and so will every op issued from now on."""
        self._failed = exc
        failed: List[_Op] = []

        def drain(seq: _Seq) -> None:
            while seq.items:
                it = seq.items.popleft()
                if type(it) is _Seq:
                    drain(it)
                    it.closed = True
                else:
                    it.exc, it.done, it.fn = exc, True, None
                    failed.append(it)
        for seq in self._stack:
            drain(seq)
        self._stack = [self.root]
        self._work.notify_all()
        self._done.notify_all()
        for op in failed:
            self.pool.post(lambda op=op: self.complete(op))

    # ---- Work's side ----------------------------------------------------------------------------
    def check_wait(self, op: _Op) -> None:
        """A callback of this group waiting for an op its own slot runs before: refuse (it would
        never end)."""
        s = _slot_of(self)
        if s is not None and not op.done and not (_before(op.path, s.path) or op.path[:len(s.path)] == s.path):
            raise OrderError("schedc backend: %s waits for %s, which is ordered after the callback's own ops: the "
                             "group runs it only once the callback has returned. Wait for it outside the callback"
                             % (s.what, _name(op)))

    def wait_done(self, op: _Op, timeout: Optional[float]) -> bool:
        with self._lock:
            return self._done.wait_for(lambda: op.done, timeout)

    def settle(self, op: _Op) -> None:
        """Work.wait's end (``op`` is done): its future completed and the callbacks registered so
        far returned, as gloo's wait() — completed here if no thread has yet. Not from inside a
        callback (a completing thread): running another op's callbacks inside this one would keep
        this one's slot open until they return, and they may wait for ops ordered after it."""
        if getattr(_tls, "completer", False) or getattr(_tls, "ctx", None):
            return
        with self._lock:
            if op.claimer is not None:
                if op.claimer != threading.get_ident() and not self._done.wait_for(lambda: op.completed, self.timeout):
                    raise _timed_out("%s: its future's callbacks have not returned after %.0f s"
                                     % (_name(op), self.timeout))
                return
        self.complete(op)

    def future(self, op: _Op) -> Any:
        """``op``'s torch future, made now if it was not; completed here if the op was already."""
        with self._lock:
            if op.fut is not None:
                return op.fut
            op.fut = torch.futures.Future(devices=[op.stream.device]) if op.stream is not None else torch.futures.Future()
            late = op.completed
        if late:
            self._set_in_stream(op)
        return op.fut

    def complete(self, op: _Op) -> None:
        """Complete ``op``'s future in this thread (its callbacks run here) unless a thread has."""
        with self._lock:
            if op.claimer is not None:
                return
            op.claimer = threading.get_ident()
            if op.fut is None:  # nobody asked for it: future() completes it when someone does
                op.completed = True
                self._done.notify_all()
                return
        try:
            self._set_in_stream(op)
        finally:
            with self._lock:
                op.completed = True
                self._done.notify_all()

    @staticmethod
    def _set_in_stream(op: _Op) -> None:
        if op.stream is not None:
            with torch.cuda.stream(op.stream):  # set_result records the future's event on this stream
                Order._set(op)
        else:
            Order._set(op)

    @staticmethod
    def _set(op: _Op) -> None:
        if op.exc is None:
            op.fut.set_result(op.result)
        elif not op.fut.done():
            op.fut.set_exception(op.exc)

    # ---- ending ---------------------------------------------------------------------------------
    def stop(self, timeout: Optional[float], abort: Optional[BaseException] = None) -> None:
        """Run the ops issued (or, ``abort``, fail those not yet running with it), then end the
        executor and the completing threads; ``timeout`` bounds the joins (None: do not wait)."""
        with self._lock:
            self._stopping = True
            if abort is not None and self._failed is None:
                self._fail_locked(abort)
            t = self._thread
            self._work.notify_all()
        if timeout is None:
            return
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        self.pool.stop(timeout)

    def after_stop(self, f: Callable[[], Any]) -> bool:
        """Run ``f`` when the executor ends (now if it has or never started); False: ran now."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._after.append(f)
                return True
        f()
        return False

    def threads(self) -> List[threading.Thread]:
        ts = [t for t in self.pool._all if t.is_alive()]
        if self._thread is not None and self._thread.is_alive():
            ts.append(self._thread)
        return ts


def _name(x: Any) -> str:
    if isinstance(x, _Op):
        return "op #%d (%s)" % (x.num, x.what)
    return x.what or "a callback"


# ---- futures: callbacks registered on a group's futures take their place in its order -------------
_tracked: "weakref.WeakKeyDictionary[Any, Tuple[Order, Any]]" = weakref.WeakKeyDictionary()
_tracked_lock = threading.Lock()
_orig: dict = {}


def track(fut: Any, order: Order, anchor: Any) -> Any:
    """Callbacks registered on ``fut`` from now on get slots in ``order`` (``anchor``: what
    completes it). Returns ``fut``."""
    with _tracked_lock:
        _tracked[fut] = (order, anchor)
    return fut


def _lookup(fut: Any) -> Optional[Tuple[Order, Any]]:
    try:
        with _tracked_lock:
            return _tracked.get(fut)
    except TypeError:
        return None


def _in_slot(order: Order, slot: _Seq, cb: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def run(fut: Any) -> Any:
        ctx = _ctx()
        ctx.append((order, slot))
        try:
            return cb(fut)
        finally:
            ctx.pop()
            order.close(slot)
    return run


def _register(name: str, fut: Any, callback: Callable[[Any], Any]) -> Tuple[Any, Optional[Tuple[Order, _Seq]]]:
    """torch's own ``name`` (then, add_done_callback) on ``fut``; for a group's future, with the
    callback given its slot in the group's order: (what torch returned, (order, slot) or None)."""
    ent = _lookup(fut)
    if ent is None:
        return _orig[name](fut, callback), None
    order, anchor = ent
    slot = order.reserve(anchor, name)
    try:
        return _orig[name](fut, _in_slot(order, slot, callback)), (order, slot)
    except BaseException:
        order.close(slot)
        raise


def _then(self: Any, callback: Callable[[Any], Any]) -> Any:
    child, placed = _register("then", self, callback)
    return child if placed is None else track(child, placed[0], placed[1])  # its callbacks: after this one's


def _add_done_callback(self: Any, callback: Callable[[Any], Any]) -> None:
    return _register("add_done_callback", self, callback)[0]


def install() -> None:
    """Route ``then`` and ``add_done_callback`` of torch futures through the order (idempotent).
    Futures that are not a schedc group's go to torch's own methods unchanged."""
    C = torch._C.Future
    if _orig:
        return
    _orig["then"] = C.then
    _orig["add_done_callback"] = C.add_done_callback
    _then.__doc__ = C.then.__doc__
    _add_done_callback.__doc__ = C.add_done_callback.__doc__
    C.then = _then
    C.add_done_callback = _add_done_callback


def orig_then(fut: Any, callback: Callable[[Any], Any]) -> Any:
    """torch's own then (for the backend's internal chaining)."""
    return (_orig.get("then") or torch._C.Future.then)(fut, callback)

