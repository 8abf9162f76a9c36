# plans.py — schedc.Plan, a verified schedule (a script run in the library's sandbox and proven, or a
# plan file), its PlanInfo, and the shortcuts check() and canonical_plan().
"""Verified plans: ``Plan``, ``PlanInfo``, ``check``, ``canonical_plan``."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

from . import _lib
from ._lib import lib
from .errors import Error, _check


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
