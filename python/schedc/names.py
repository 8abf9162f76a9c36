# names.py — the spellings of the data types and ops the binding takes ("f32", "sum"), as the library
# spells them (_lib.check_abi compares them at import), and the ops' parsing into the library's
# values, exact mode's included.
"""Data type, op and wire names (``schedc.DTYPES``, ``schedc.OPS``, ``schedc.EXACT_DTYPES``, ``schedc.WIRES``)."""
from __future__ import annotations

import ctypes
from typing import Any, Optional

from ._lib import lib
from .errors import _check

DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64")
OPS = ("sum", "prod", "min", "max", "avg")

# exact mode (docs/determinism.md "Exact mode"): sum and avg of f32, f16, bf16 on one fixed-point
# grid shared by all ranks, so every plan and rank layout gives the same bits
EXACT_DTYPES = (0, 2, 3)  # f32, f16, bf16

# quantized wires (docs/compression.md): sum and avg of f32, f16, bf16 as 8- or 16-bit integers on
# one grid; None or "default": the data type itself
WIRES = ("q8", "q16")


def _parse_op(op: str) -> int:
    v = ctypes.c_int()
    if not isinstance(op, str):
        raise TypeError("schedc: op must be a string (%s), not %r" % (", ".join(OPS), op))
    _check(lib.schedc_op_parse(op.encode(), ctypes.byref(v)), "op")
    return v.value


def _exact_op(op: str, dtype: int, what: str) -> int:
    """The C op of ``op`` with exact=True (SCHEDC_SUM_EXACT / SCHEDC_AVG_EXACT), refused here for
    another op or dtype: before any rank waits, the same answer on every rank."""
    if op not in ("sum", "avg"):
        raise ValueError("schedc.%s: exact=True takes op 'sum' or 'avg', not %r" % (what, op))
    if dtype not in EXACT_DTYPES:
        raise TypeError("schedc.%s: exact=True takes float32, float16 or bfloat16 data, not %s"
                        % (what, DTYPES[dtype] if 0 <= dtype < len(DTYPES) else dtype))
    return _parse_op(op + "_exact")


def _call_opts(what: str, dtype: int, op: str, wire: Optional[str] = None, topk: Optional[float] = None,
               residual: Any = None, count: int = 0) -> Any:
    """The schedc_call_opts of a compressed call (None: a plain call), checked here so that every
    rank refuses a bad argument before any waits: wire "q8"/"q16", topk a fraction in (0, 1],
    residual a CPU buffer of ``count`` elements of the data's dtype (error feedback). The library
    checks the rest (the op, NaN/Inf, the ranks the bits can hold) on every rank alike."""
    from ._lib import CallOpts
    from .buffers import _Buf
    if wire is None and topk is None and residual is None:
        return None, None
    o = CallOpts()
    o.size = ctypes.sizeof(CallOpts)
    if wire is not None and wire != "default":
        v = ctypes.c_int()
        if not isinstance(wire, str) or lib.schedc_wire_parse(wire.encode(), ctypes.byref(v)) != 0:
            raise ValueError("schedc.%s: wire must be 'q8' or 'q16', not %r" % (what, wire))
        o.wire = v.value
    if topk is not None:
        if isinstance(topk, bool) or not isinstance(topk, (int, float)) or not 0 < float(topk) <= 1:
            raise ValueError("schedc.%s: topk must be a fraction in (0, 1], not %r" % (what, topk))
        o.topk = float(topk)
    keep = None
    if residual is not None:
        r = _Buf(residual, what + " (residual)")
        if r.kind == "cuda":
            raise TypeError("schedc.%s: the residual must be in host memory (compressed calls run on the CPU backends)"
                            % what)
        if r.dtype != dtype or r.count != count:
            raise ValueError("schedc.%s: the residual must hold %d elements of the data's dtype (%s), got %d of %s"
                             % (what, count, DTYPES[dtype], r.count, DTYPES[r.dtype]))
        o.residual = r.ptr
        keep = r
    return o, keep
