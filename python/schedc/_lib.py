# _lib.py — finds libschedc.so and declares the C prototypes (ctypes) the package calls.
# Lookup order: $SCHEDC_LIBRARY, the copy installed inside the package (_native/lib), then the
# source checkout's build/lib (so the tests run against the tree they were built in).
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Optional

_HERE = Path(__file__).resolve().parent


def _candidates() -> list:
    env = os.environ.get("SCHEDC_LIBRARY")
    if env:
        # Explicit choice: no silent fallback to another copy if it is wrong.
        return [Path(env)]
    out = [_HERE / "_native" / "lib" / "libschedc.so"]
    root = _HERE.parent.parent  # python/schedc -> repository root in a checkout
    out += [root / "build" / "lib" / "libschedc.so"]
    return out


def _load() -> ctypes.CDLL:
    tried = []
    for p in _candidates():
        if p.exists():
            return ctypes.CDLL(str(p))
        tried.append(str(p))
    raise OSError("schedc: libschedc.so not found (looked at: %s); set SCHEDC_LIBRARY to its path "
                  "or install the package with `pip install ./python`" % ", ".join(tried))


lib = _load()

c_int, c_long, c_size_t, c_double, c_char_p, c_void_p = (ctypes.c_int, ctypes.c_long, ctypes.c_size_t,
                                                       ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p)
c_uint64 = ctypes.c_uint64


class LoadOpts(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("nranks", c_int), ("nnodes", c_int), ("topology", c_char_p),
                ("defines", ctypes.POINTER(c_char_p)), ("ndefines", c_int), ("max_instructions", c_uint64),
                ("max_memory", c_size_t)]


class PlanInfoC(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("name", c_char_p), ("source", c_char_p), ("collective", c_int),
                ("nranks", c_int), ("nnodes", c_int), ("nchunks", c_int), ("root", c_int), ("nsteps", c_int),
                ("ntransfers", c_long), ("canonical", c_int), ("hash", c_uint64), ("max_sent", c_double),
                ("max_recv", c_double)]


class CommOpts(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("timeout_s", c_double), ("slice_bytes", c_size_t), ("plan", c_void_p),
                ("verify", c_int), ("repair", c_int), ("tuning", c_char_p)]


class Uid(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_ubyte * 16)]


def _proto(name: str, res, *args) -> None:
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)


P = c_void_p
_proto("schedc_status_str", c_char_p, c_int)
_proto("schedc_errmsg", c_char_p)
_proto("schedc_dtype_parse", c_int, c_char_p, ctypes.POINTER(c_int))
_proto("schedc_op_parse", c_int, c_char_p, ctypes.POINTER(c_int))
_proto("schedc_dtype_size", c_size_t, c_int)
_proto("schedc_plan_open", c_int, c_char_p, ctypes.POINTER(LoadOpts), ctypes.POINTER(P))
_proto("schedc_plan_free", None, P)
_proto("schedc_plan_save", c_int, P, c_char_p)
_proto("schedc_plan_get_info", c_int, P, ctypes.POINTER(PlanInfoC))
_proto("schedc_plan_order", c_long, P, c_int, c_int, c_char_p, c_size_t)
_proto("schedc_plan_chunk_holder", c_int, P, c_int)
_proto("schedc_unique_id", c_int, ctypes.POINTER(Uid))
_proto("schedc_comm_init_shm_uid", c_int, c_int, c_int, ctypes.POINTER(Uid), ctypes.POINTER(CommOpts),
       ctypes.POINTER(P))
_proto("schedc_comm_init_shm", c_int, c_int, c_int, c_char_p, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
_proto("schedc_comm_init_env", c_int, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
_proto("schedc_comm_init_mpi", c_int, P, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
_proto("schedc_comm_init_cuda_over", c_int, P, c_int, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
_proto("schedc_cuda_set_stream", c_int, P, P)
_proto("schedc_cuda_sync", c_int, P)
_proto("schedc_comm_init_threads", c_int, c_int, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
_proto("schedc_comm_free", None, P)
_proto("schedc_comm_rank", c_int, P)
_proto("schedc_comm_nranks", c_int, P)
_proto("schedc_allreduce", c_int, P, P, c_size_t, c_int, c_int, P, P)
_proto("schedc_reduce_scatter", c_int, P, P, c_size_t, c_int, c_int, P, P)
_proto("schedc_allgather", c_int, P, P, c_size_t, c_int, P, P)
_proto("schedc_broadcast", c_int, P, P, c_size_t, c_int, c_int, P, P)
_proto("schedc_reduce", c_int, P, P, c_size_t, c_int, c_int, c_int, P, P)
_proto("schedc_digest", c_uint64, P, c_size_t)
_proto("schedc_accum_create", c_int, c_size_t, c_int, c_int, c_int, c_int, ctypes.POINTER(P))
_proto("schedc_accumulate", c_int, P, c_int, P)
_proto("schedc_accum_result", c_int, P, P)
_proto("schedc_accum_reset", None, P)
_proto("schedc_accum_free", None, P)

STATUS_NAMES = ["SCHEDC_OK", "SCHEDC_EINVAL", "SCHEDC_ENOMEM", "SCHEDC_EIO", "SCHEDC_ESCRIPT", "SCHEDC_EVERIFY",
                "SCHEDC_EPLAN", "SCHEDC_EVERSION", "SCHEDC_ETIMEOUT", "SCHEDC_EPEER", "SCHEDC_EMISMATCH",
                "SCHEDC_EUNAVAIL", "SCHEDC_ECORRUPT", "SCHEDC_EINTERNAL"]
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"]


def errmsg() -> str:
    m: Optional[bytes] = lib.schedc_errmsg()
    return m.decode(errors="replace") if m else ""
