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


class CallOpts(ctypes.Structure):
    """schedc_call_opts: a call's compression (docs/compression.md)."""
    _fields_ = [("size", c_size_t), ("wire", c_int), ("topk", c_double), ("residual", c_void_p)]


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
_proto("schedc_uid_net", c_int, ctypes.POINTER(Uid))
_proto("schedc_comm_init_net", c_int, c_int, c_int, ctypes.POINTER(Uid), ctypes.POINTER(CommOpts), ctypes.POINTER(P))
# schedc_oob_allgather: int (*)(void *ctx, const void *mine, void *all, size_t bytes)
OobAllgather = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_size_t)
_proto("schedc_comm_init_net_oob", c_int, c_int, c_int, OobAllgather, P, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
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
_proto("schedc_allreduce_v2", c_int, P, P, c_size_t, c_int, c_int, P, P, ctypes.POINTER(CallOpts))
_proto("schedc_reduce_scatter_v2", c_int, P, P, c_size_t, c_int, c_int, P, P, ctypes.POINTER(CallOpts))
_proto("schedc_reduce_v2", c_int, P, P, c_size_t, c_int, c_int, c_int, P, P, ctypes.POINTER(CallOpts))
_proto("schedc_accum_allreduce_v2", c_int, P, P, P, P, ctypes.POINTER(CallOpts))
_proto("schedc_wire_parse", c_int, c_char_p, ctypes.POINTER(c_int))
_proto("schedc_digest", c_uint64, P, c_size_t)
_proto("schedc_accum_create", c_int, c_size_t, c_int, c_int, c_int, c_int, ctypes.POINTER(P))
_proto("schedc_accumulate", c_int, P, c_int, P)
_proto("schedc_accum_result", c_int, P, P)
_proto("schedc_accum_reset", None, P)
_proto("schedc_accum_free", None, P)
_proto("schedc_accum_allreduce", c_int, P, P, P, P)
_proto("schedc_comm_shrink", c_int, P, ctypes.POINTER(CommOpts), ctypes.POINTER(P))
_proto("schedc_comm_parent_rank", c_int, P, c_int)
_proto("schedc_crc32c", ctypes.c_uint32, ctypes.c_uint32, P, c_size_t)
_proto("schedc_crc32c_combine", ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32, c_size_t)

STATUS_NAMES = ["SCHEDC_OK", "SCHEDC_EINVAL", "SCHEDC_ENOMEM", "SCHEDC_EIO", "SCHEDC_ESCRIPT", "SCHEDC_EVERIFY",
                "SCHEDC_EPLAN", "SCHEDC_EVERSION", "SCHEDC_ETIMEOUT", "SCHEDC_EPEER", "SCHEDC_EMISMATCH",
                "SCHEDC_EUNAVAIL", "SCHEDC_ECORRUPT", "SCHEDC_EINTERNAL"]
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"]


_proto("schedc_dtype_name", c_char_p, c_int)
_proto("schedc_op_name", c_char_p, c_int)
_proto("schedc_collective_name", c_char_p, c_int)
_proto("schedc_plan_builtin", c_int, c_int, c_int, c_int, ctypes.POINTER(P))

# The tables the package copies by hand, as the library spells them (checked by check_abi)
DTYPE_NAMES = ["f32", "f64", "f16", "bf16", "i32", "i64"]
DTYPE_SIZES = [4, 8, 2, 2, 4, 8]
OP_NAMES = ["sum", "prod", "min", "max", "avg"]
EXACT_OPS = {64: "sum_exact", 68: "avg_exact"}  # SCHEDC_SUM_EXACT, SCHEDC_AVG_EXACT


class AbiError(ImportError):
    """The package's copy of a C table or struct disagrees with the loaded libschedc.so."""


def _declare_info() -> None:
    """The version and build report (schedc_version, schedc_revision, schedc_info): a library too old
    to have them is refused like any other mismatch."""
    try:
        _proto("schedc_version", c_char_p)
        _proto("schedc_revision", c_char_p)
        _proto("schedc_info", c_int, c_int, ctypes.POINTER(c_void_p))
        _proto("schedc_free", None, c_void_p)
    except AttributeError as e:
        raise AbiError("schedc: %s has no %s (a library older than this binding: reinstall the package and the "
                       "library from one checkout)" % (getattr(lib, "_name", "libschedc.so"), e)) from None


def version() -> str:
    """schedc_version(): the library's "MAJOR.MINOR.PATCH" (the package's __version__)."""
    return lib.schedc_version().decode()


def check_abi() -> None:
    """Compare the hand-copied tables and PlanInfoC with the loaded library (at import): a library
    of another version, or a copy that drifted from schedc.h, is refused with the first
    difference named, instead of misreading memory or mislabelling a status."""
    where = getattr(lib, "_name", "libschedc.so")

    def fail(what: str) -> None:
        raise AbiError("schedc: the Python binding does not match %s: %s (reinstall the package and the library "
                       "from one checkout)" % (where, what))
    for table, fn in ((DTYPE_NAMES, lib.schedc_dtype_name), (OP_NAMES, lib.schedc_op_name),
                      (COLLECTIVES, lib.schedc_collective_name)):
        for i, want in enumerate(table + [None]):
            got = fn(i)
            got = got.decode() if got is not None else None
            if got != want:
                fail("value %d is %r in the library, %r here" % (i, got, want))
    for v, want in EXACT_OPS.items():
        got = lib.schedc_op_name(v)
        if (got.decode() if got is not None else None) != want:
            fail("op value %d is %r in the library, %r here" % (v, got, want))
    for i, sz in enumerate(DTYPE_SIZES):
        if lib.schedc_dtype_size(i) != sz:
            fail("dtype %s has %d bytes in the library, %d here" % (DTYPE_NAMES[i], lib.schedc_dtype_size(i), sz))
    # statuses: the messages are the library's; the names are checked against schedc.h where the
    # checkout has it, and their count against the library's out-of-range message
    unknown = lib.schedc_status_str(len(STATUS_NAMES) + 100)
    if lib.schedc_status_str(len(STATUS_NAMES)) != unknown or lib.schedc_status_str(len(STATUS_NAMES) - 1) == unknown:
        fail("the library has another number of statuses than the %d here" % len(STATUS_NAMES))
    hdr = _HERE.parent.parent / "include" / "schedc" / "schedc.h"
    if hdr.exists():
        import re
        text = hdr.read_text()
        names = re.findall(r"X\((SCHEDC_E\w+|SCHEDC_OK), (\d+),", text[text.find("SCHEDC_STATUS_LIST"):
                                                                   text.find("typedef enum schedc_status")])
        if [n for n, _ in sorted(names, key=lambda x: int(x[1]))] != STATUS_NAMES:
            fail("status names differ from %s" % hdr)
    # PlanInfoC's layout: every field read back from a plan whose values are known
    p = ctypes.c_void_p()
    if lib.schedc_plan_builtin(3, 3, 2, ctypes.byref(p)) != 0:  # broadcast, 3 ranks, root 2
        fail("schedc_plan_builtin failed: %s" % errmsg())
    try:
        i = PlanInfoC()
        i.size = ctypes.sizeof(PlanInfoC)
        if lib.schedc_plan_get_info(p, ctypes.cast(ctypes.pointer(i), lib.schedc_plan_get_info.argtypes[1])) != 0:
            fail("schedc_plan_get_info refused sizeof(PlanInfoC) = %d: %s" % (i.size, errmsg()))
        if (i.collective, i.nranks, i.root, i.canonical) != (3, 3, 2, 0) or not i.name or not 0 < i.nchunks < 1000 \
                or not 0 <= i.max_sent <= 16 or not 0 <= i.max_recv <= 16 or i.ntransfers <= 0:
            fail("PlanInfoC read a broadcast plan on 3 ranks, root 2, as collective %d, %d ranks, root %d, %d chunks, "
                 "max_sent %g: the struct's fields are not the library's" % (i.collective, i.nranks, i.root,
                                                                             i.nchunks, i.max_sent))
    finally:
        lib.schedc_plan_free(p)


def errmsg() -> str:
    m: Optional[bytes] = lib.schedc_errmsg()
    return m.decode(errors="replace") if m else ""


_declare_info()
check_abi()

# Library log messages to Python's logging (logger "schedc"), where the library can route them
# (schedc_set_log; older libraries print to stderr). The callback object lives as long as the
# process: the library keeps its pointer.
if hasattr(lib, "schedc_set_log"):
    import logging as _logging

    _LOG_LEVELS = {0: _logging.ERROR, 1: _logging.WARNING, 2: _logging.INFO, 3: _logging.DEBUG}
    _LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)

    def _on_log(ctx: Optional[int], level: int, msg: Optional[bytes]) -> None:
        try:
            _logging.getLogger("schedc").log(_LOG_LEVELS.get(level, _logging.INFO),
                                             (msg or b"").decode(errors="replace").rstrip("\n"))
        except Exception:  # never let an exception cross into C
            pass

    _log_callback = _LOG_FN(_on_log)
    lib.schedc_set_log.restype = None
    lib.schedc_set_log.argtypes = [_LOG_FN, c_void_p]
    lib.schedc_set_log(_log_callback, None)
