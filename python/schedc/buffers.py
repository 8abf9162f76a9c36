# buffers.py — what a collective's argument is to C: a contiguous, writable buffer's address, element
# count and schedc dtype, from a torch tensor (CPU or CUDA), a __cuda_array_interface__ object or a
# buffer-protocol object (numpy, array.array); digest() of a buffer's bytes.
"""Buffers the collectives take, and ``digest``."""
from __future__ import annotations

import ctypes
import operator
from typing import Any, Dict, Mapping, Optional

from . import _lib
from ._lib import lib

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
