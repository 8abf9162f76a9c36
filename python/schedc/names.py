# names.py — the spellings of the data types and ops the binding takes ("f32", "sum"), as the library
# spells them (_lib.check_abi compares them at import), and the ops' parsing into the library's
# values, exact mode's included.
"""Data type and op names (``schedc.DTYPES``, ``schedc.OPS``, ``schedc.EXACT_DTYPES``)."""
from __future__ import annotations

import ctypes

from ._lib import lib
from .errors import _check

DTYPES = ("f32", "f64", "f16", "bf16", "i32", "i64")
OPS = ("sum", "prod", "min", "max", "avg")

# exact mode (docs/determinism.md "Exact mode"): sum and avg of f32, f16, bf16 on one fixed-point
# grid shared by all ranks, so every plan and rank layout gives the same bits
EXACT_DTYPES = (0, 2, 3)  # f32, f16, bf16


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
