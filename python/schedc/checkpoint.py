# checkpoint.py — checkpoints that cannot lie (docs/recovery.md): training state (model, optimizer,
# CanonicalGrads, RNG states, data position, step) written atomically (a temporary file, fsync,
# rename, fsync of the folder) in the container train_mlp.c writes too — named blobs, a CRC32C each
# and one over the whole file — the last K kept, every byte verified on load, a bad newest one
# refused by name and the one before it used. Rank 0 writes the whole state, or every rank its own
# shard (FSDP2's DTensor state dicts), and a sharded checkpoint loads at another world size too.
"""Checkpoints that cannot lie: ``save``, ``load``, ``checkpoints`` and ``CheckpointError``
(docs/recovery.md). The container is ``write_container`` / ``read_container``."""
from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import struct
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ._lib import lib

__all__ = ["save", "load", "checkpoints", "CheckpointError", "crc32c", "write_container", "read_container"]

MAGIC, END, VERSION, ALIGN = b"SCCKPT01", b"SCCKEND1", 1, 64
_HEAD = struct.Struct("<8sIIQQ")    # magic, version, blobs, step, reserved: 32 bytes
_ENTRY = struct.Struct("<64sQQIIQ")  # name, offset, bytes, CRC32C, reserved, reserved: 96 bytes
_TAIL = struct.Struct("<QII8s")     # file length, CRC32C of everything before the trailer, 0, END: 24 bytes
_ZERO = bytes(ALIGN)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be used: ``path`` names the file (or folder), ``reason`` what failed."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__("%s: %s" % (path, reason))


# ---- the container ------------------------------------------------------------------------------

def _view(obj: Any) -> Tuple[memoryview, int, Any]:
    """A byte view of obj (bytes, bytearray, memoryview, numpy array, torch tensor), its address and
    what keeps that address alive."""
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # a torch tensor, on the host
        import torch
        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous().reshape(-1)
        b = t.view(torch.uint8) if t.numel() else torch.empty(0, dtype=torch.uint8)
        return memoryview(b.numpy()), b.data_ptr(), b
    mv = memoryview(obj).cast("B")
    if mv.readonly:
        keep = ctypes.create_string_buffer(bytes(mv), len(mv)) if len(mv) else None
        return mv, ctypes.addressof(keep) if keep is not None else 0, keep
    c = (ctypes.c_char * len(mv)).from_buffer(mv) if len(mv) else None
    return mv, ctypes.addressof(c) if c is not None else 0, c


def crc32c(data: Any, crc: int = 0) -> int:
    """CRC32C of ``data`` (bytes-like or a tensor) continuing ``crc`` (schedc_crc32c, SSE4.2)."""
    mv, ptr, keep = _view(data)
    return int(lib.schedc_crc32c(crc, ptr, len(mv)))


def _write_all(fd: int, mv: memoryview) -> None:
    while len(mv):
        n = os.write(fd, mv[:1 << 30])
        mv = mv[n:]


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_container(path: str, blobs: Sequence[Tuple[str, Any]], step: int,
                    halfway: Optional[Callable[[], None]] = None) -> None:
    """Write ``blobs`` (name, bytes-like or tensor) as the checkpoint file ``path``, atomically: to
    a temporary file beside it, fsync, rename, fsync of the folder; the file is whole or absent.
    ``halfway``: a test aid called halfway through the last blob's bytes."""
    views = []
    for name, obj in blobs:
        enc = name.encode()
        if len(enc) >= 64:
            raise ValueError("schedc.checkpoint: blob name %r is longer than 63 bytes" % name)
        mv, ptr, keep = _view(obj)
        views.append((enc, mv, int(lib.schedc_crc32c(0, ptr, len(mv))), keep))
    off = -(-(_HEAD.size + len(views) * _ENTRY.size) // ALIGN) * ALIGN
    entries, offsets = [], []
    for enc, mv, crc, _ in views:
        offsets.append(off)
        entries.append(_ENTRY.pack(enc, off, len(mv), crc, 0, 0))
        off = -(-(off + len(mv)) // ALIGN) * ALIGN
    head = _HEAD.pack(MAGIC, VERSION, len(views), int(step), 0) + b"".join(entries)
    # the whole file's CRC from its parts: the blobs' CRCs are combined, never computed twice
    whole = crc32c(head)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(folder, ".%s.tmp.%d" % (os.path.basename(path), os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, memoryview(head))
        at = len(head)
        for i, (enc, mv, crc, _) in enumerate(views):
            pad = offsets[i] - at
            _write_all(fd, memoryview(_ZERO[:pad]))
            whole = crc32c(_ZERO[:pad], whole)
            whole = int(lib.schedc_crc32c_combine(whole, crc, len(mv)))
            if halfway is not None and i == len(views) - 1:
                _write_all(fd, mv[:len(mv) // 2])
                halfway()
                _write_all(fd, mv[len(mv) // 2:])
            else:
                _write_all(fd, mv)
            at = offsets[i] + len(mv)
        pad = off - at
        _write_all(fd, memoryview(_ZERO[:pad]))
        whole = crc32c(_ZERO[:pad], whole)
        _write_all(fd, memoryview(_TAIL.pack(off + _TAIL.size, whole, 0, END)))
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    os.close(fd)
    os.rename(tmp, path)
    _fsync_dir(folder)


def _buffer(n: int) -> memoryview:
    """n writable bytes, not zeroed (a torch or numpy buffer: allocating a zeroed bytearray of a
    checkpoint's size cost more than reading it)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        return memoryview(torch.empty(n, dtype=torch.uint8).numpy()) if n else memoryview(bytearray())
    np = sys.modules.get("numpy")
    if np is not None:
        return memoryview(np.empty(n, dtype=np.uint8))
    return memoryview(bytearray(n))


def _readinto(f: Any, mv: memoryview) -> int:
    got = 0
    while got < len(mv):
        n = f.readinto(mv[got:])
        if not n:
            break
        got += n
    return got


def read_container(path: str) -> Tuple[int, Dict[str, memoryview]]:
    """Read and verify a checkpoint file: every blob's CRC32C and the whole file's (combined from the
    parts' as the writer did: each byte is read once and hashed once). Returns (step, {name: bytes,
    each blob read straight into a buffer of its own}); raises CheckpointError naming the file and
    what failed."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CheckpointError(path, "cannot read it: %s" % e.strerror) from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < _HEAD.size + _TAIL.size:
            raise CheckpointError(path, "truncated: %d bytes, less than a header and a trailer" % size)
        head = f.read(_HEAD.size)
        magic, version, nblobs, step, _ = _HEAD.unpack_from(head, 0)
        f.seek(size - _TAIL.size)
        length, want, _, end = _TAIL.unpack(f.read(_TAIL.size))
        if magic != MAGIC:
            raise CheckpointError(path, "not a schedc checkpoint (no %s magic)" % MAGIC.decode())
        if end != END or length != size:
            raise CheckpointError(path, "truncated or cut: %d bytes and no trailer at its end (a write that did not "
                                        "finish)" % size)
        if version != VERSION:
            raise CheckpointError(path, "format version %d, this schedc reads %d" % (version, VERSION))
        limit = size - _TAIL.size
        if nblobs > 1 << 20 or _HEAD.size + nblobs * _ENTRY.size > limit:
            raise CheckpointError(path, "its table (%d entries) does not fit in its %d bytes" % (nblobs, size))
        f.seek(_HEAD.size)
        table = f.read(nblobs * _ENTRY.size)
        whole = crc32c(table, crc32c(head))
        at = len(head) + len(table)
        out: Dict[str, memoryview] = {}
        for i in range(nblobs):
            enc, off, n, crc, _, _ = _ENTRY.unpack_from(table, i * _ENTRY.size)
            name = enc.split(b"\0", 1)[0].decode("utf-8", "replace")
            if off < at or off > limit or n > limit - off:
                raise CheckpointError(path, "tensor '%s' lies outside the file or over another" % name)
            gap = _gap(f, at, off)
            whole = crc32c(gap, whole)
            mv = _buffer(n)
            if _readinto(f, mv) != n:
                raise CheckpointError(path, "tensor '%s' is cut short" % name)
            c = crc32c(mv)
            if c != crc:
                raise CheckpointError(path, "tensor '%s' fails its CRC32C (stored %08x, computed %08x): corrupt"
                                      % (name, crc, c))
            whole = int(lib.schedc_crc32c_combine(whole, c, n))
            out[name] = mv
            at = off + n
        whole = crc32c(_gap(f, at, limit), whole)
    if whole != want:
        raise CheckpointError(path, "the file fails its CRC32C (stored %08x, computed %08x): its header or table is "
                                    "corrupt" % (want, whole))
    return int(step), out


def _gap(f: Any, at: int, to: int) -> bytes:
    """The bytes between two parts (the writer's zeros, or whatever is there: the file's CRC covers it)."""
    f.seek(at)
    return f.read(to - at)


# ---- the state tree: tensors into blobs, the rest into a JSON index -----------------------------

def _torch() -> Any:
    import torch
    return torch


def _is_dtensor(v: Any) -> bool:
    return type(v).__name__ == "DTensor" and hasattr(v, "to_local")


class _Enc:
    """Encodes a state tree: tensors become blobs t0, t1, ... (in traversal order, the same on every
    rank), everything else JSON. ``sharded``: a DTensor keeps its local shard and placement;
    otherwise it is gathered whole (a collective every rank makes in the same order)."""

    def __init__(self, sharded: bool) -> None:
        self.sharded = sharded
        self.blobs: List[Tuple[str, Any]] = []

    def blob(self, data: Any) -> str:
        name = "t%d" % len(self.blobs)
        self.blobs.append((name, data))
        return name

    def __call__(self, v: Any, where: str) -> Any:
        torch = sys.modules.get("torch")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, dict):
            return {"__dict__": [[self(k, where), self(x, "%s[%r]" % (where, k))] for k, x in v.items()]}
        if isinstance(v, list):
            return [self(x, "%s[%d]" % (where, i)) for i, x in enumerate(v)]
        if isinstance(v, tuple):
            return {"__tuple__": [self(x, "%s[%d]" % (where, i)) for i, x in enumerate(v)]}
        if isinstance(v, (bytes, bytearray)):
            return {"__bytes__": self.blob(bytes(v))}
        if torch is not None and isinstance(v, torch.Tensor):
            if _is_dtensor(v):
                if not self.sharded:
                    t = v.full_tensor()
                    return {"__tensor__": self.blob(t), "dtype": str(t.dtype)[6:], "shape": list(t.shape)}
                mesh = v.device_mesh
                if mesh.ndim != 1:
                    raise ValueError("schedc.checkpoint: %s is a DTensor on a %d-D mesh; sharded checkpoints take 1-D "
                                     "meshes (FSDP2's fully_shard)" % (where, mesh.ndim))
                pl = v.placements[0]
                kind = (["shard", int(pl.dim)] if pl.is_shard() else ["replicate"] if pl.is_replicate()
                        else None)
                if kind is None:
                    raise ValueError("schedc.checkpoint: %s has placement %s; sharded checkpoints take Shard and "
                                     "Replicate" % (where, pl))
                t = v.to_local()
                return {"__dtensor__": self.blob(t), "dtype": str(t.dtype)[6:], "local_shape": list(t.shape),
                        "shape": list(v.shape), "placement": kind, "coord": int(mesh.get_coordinate()[0]),
                        "mesh_size": int(mesh.size())}
            return {"__tensor__": self.blob(v), "dtype": str(v.dtype)[6:], "shape": list(v.shape)}
        np = sys.modules.get("numpy")
        if np is not None and isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            return {"__ndarray__": self.blob(a.view(np.uint8).reshape(-1) if a.size else b""), "dtype": a.dtype.str,
                    "shape": list(a.shape)}
        if np is not None and isinstance(v, np.generic):
            return v.item()
        raise TypeError("schedc.checkpoint: %s is a %s, which a checkpoint cannot hold (tensors, numpy arrays, "
                        "numbers, strings, bytes, None, and lists, tuples and dicts of them)" % (where, type(v).__name__))


def _tensor_from(data: memoryview, dtype: str, shape: List[int]) -> Any:
    torch = _torch()
    dt = getattr(torch, dtype)
    if not len(data):
        return torch.empty(shape, dtype=dt)
    if data.readonly:
        data = memoryview(bytearray(data))
    t = torch.frombuffer(data, dtype=torch.uint8)  # the blob's own buffer (read_container): no copy
    return t.view(dt).reshape(shape)


def _decode(v: Any, blobs: Dict[str, memoryview], path: str, shards: Optional[List[Dict[str, memoryview]]] = None,
            shard_idx: Optional[List[Any]] = None) -> Any:
    """The value of an encoded tree; a sharded DTensor entry becomes its whole tensor, assembled from
    every shard's piece (shards: each shard file's blobs, in rank order; shard_idx: their trees)."""
    if isinstance(v, list):
        return [_decode(x, blobs, path, shards, [s[i] for s in shard_idx] if shard_idx else None) for i, x in enumerate(v)]
    if not isinstance(v, dict):
        return v
    if "__dict__" in v:
        out = {}
        for i, (k, x) in enumerate(v["__dict__"]):
            out[_decode(k, blobs, path)] = _decode(x, blobs, path, shards,
                                                   [s["__dict__"][i][1] for s in shard_idx] if shard_idx else None)
        return out
    if "__tuple__" in v:
        return tuple(_decode(x, blobs, path, shards, [s["__tuple__"][i] for s in shard_idx] if shard_idx else None)
                     for i, x in enumerate(v["__tuple__"]))
    if "__bytes__" in v:
        return bytes(blobs[v["__bytes__"]])
    if "__tensor__" in v:
        return _tensor_from(blobs[v["__tensor__"]], v["dtype"], v["shape"])
    if "__ndarray__" in v:
        import numpy as np
        return np.frombuffer(bytes(blobs[v["__ndarray__"]]), dtype=np.dtype(v["dtype"])).reshape(v["shape"]).copy()
    if "__dtensor__" in v:
        torch = _torch()
        if shards is None or shard_idx is None:  # this rank's piece only (shards were not read)
            return _tensor_from(blobs[v["__dtensor__"]], v["dtype"], v["local_shape"])
        pieces = sorted(((e["coord"], _tensor_from(s[e["__dtensor__"]], e["dtype"], e["local_shape"]))
                         for e, s in zip(shard_idx, shards)), key=lambda p: p[0])
        if v["placement"][0] == "replicate":
            return pieces[0][1]
        full = torch.cat([p for _, p in pieces], dim=v["placement"][1])
        if list(full.shape) != v["shape"]:
            raise CheckpointError(path, "the shards of a tensor assemble to %s, not its shape %s"
                                  % (list(full.shape), v["shape"]))
        return full
    if "__canonical_grads__" in v:
        return v
    raise CheckpointError(path, "its index holds an unknown entry %s" % sorted(v)[:3])


# ---- what is saved for each kind of object ------------------------------------------------------

def _grads_state(g: Any) -> Dict[str, Any]:
    if g.added:
        raise ValueError("schedc.checkpoint: CanonicalGrads holds leaves %s of a step not reduced yet: save between "
                         "steps (after reduce())" % g.added[:4])
    return {"__canonical_grads__": True, "leaves": g.leaves, "op": g.op, "exact": g.exact, "dtype": str(g.dtype)[6:],
            "count": g.count}


def _cpu(v: Any) -> Any:
    """v with every tensor a detached CPU copy (what all_gather_object may pickle on any group)."""
    torch = sys.modules.get("torch")
    if isinstance(v, dict):
        return {k: _cpu(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return type(v)(_cpu(x) for x in v)
    if torch is not None and isinstance(v, torch.Tensor):
        return v.detach().cpu().clone()
    return v


def _per_rank_state(enc: "_Enc", sd: Any, name: str, sharded: bool, d: Any, group: Any, rank: int, world: int) -> Any:
    """The state of an object whose state is each rank's own (``checkpoint_per_rank``: error feedback's
    residuals): every rank's, gathered to the whole checkpoint (a collective), or this rank's in its
    own shard. Loaded back rank by rank at the same world size only."""
    if sharded:
        return {"__per_rank__": [enc(sd, name)], "rank": rank}
    return {"__per_rank__": [enc(s, "%s (rank %d)" % (name, r)) for r, s in enumerate(_gather(d, group, _cpu(sd), world))]}


def _is_grads(v: Any) -> bool:
    return type(v).__name__ == "CanonicalGrads" and hasattr(v, "per_rank")


def _rng_state() -> Dict[str, Any]:
    torch = sys.modules.get("torch")
    out: Dict[str, Any] = {"python": random.getstate()}
    if torch is not None:
        out["torch"] = torch.get_rng_state()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            out["cuda"] = torch.cuda.get_rng_state_all()
    np = sys.modules.get("numpy")
    if np is not None:
        out["numpy"] = np.random.get_state()
    return out


def _set_rng_state(s: Dict[str, Any]) -> None:
    random.setstate(s["python"])
    torch = sys.modules.get("torch")
    if torch is not None and "torch" in s:
        torch.set_rng_state(s["torch"])
        if "cuda" in s and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(s["cuda"])
    np = sys.modules.get("numpy")
    if np is not None and "numpy" in s:
        np.random.set_state(s["numpy"])


def _as_dtensor_like(full: Any, target: Any) -> Any:
    """full (a whole tensor) as this rank's piece of a DTensor laid out like target."""
    from torch.distributed.tensor import DTensor  # torch >= 2.4
    pl = target.placements
    mesh = target.device_mesh
    if mesh.ndim != 1:
        raise ValueError("schedc.checkpoint: a DTensor on a %d-D mesh (sharded checkpoints take 1-D meshes)" % mesh.ndim)
    local = full
    if pl[0].is_shard():
        chunks = full.chunk(mesh.size(), dim=pl[0].dim)
        c = int(mesh.get_coordinate()[0])
        local = chunks[c] if c < len(chunks) else full.narrow(pl[0].dim, 0, 0)
    local = local.to(device=target.to_local().device, dtype=target.dtype).contiguous()
    return DTensor.from_local(local, mesh, pl, run_check=False, shape=target.shape, stride=target.stride())


def _fit(value: Any, target: Any) -> Any:
    """A loaded tree made to fit the live object's state dict: whole tensors where it holds DTensors
    become DTensors laid out like them (a checkpoint of any world size loads into any)."""
    if _is_dtensor(target) and not _is_dtensor(value) and hasattr(value, "shape"):
        if list(value.shape) != list(target.shape):
            raise ValueError("schedc.checkpoint: a tensor of shape %s where the model holds %s"
                             % (list(value.shape), list(target.shape)))
        return _as_dtensor_like(value, target)
    if isinstance(value, dict) and isinstance(target, dict):
        return {k: _fit(v, target[k]) if k in target else v for k, v in value.items()}
    if isinstance(value, (list, tuple)) and isinstance(target, (list, tuple)) and len(value) == len(target):
        return type(value)(_fit(v, t) for v, t in zip(value, target))
    return value


def _fit_optimizer(value: Dict[str, Any], opt: Any) -> Dict[str, Any]:
    """An optimizer's loaded state: a per-parameter tensor of the parameter's shape becomes a DTensor
    laid out like that parameter (FSDP2's optimizer state is sharded like its parameters)."""
    params = [p for g in opt.param_groups for p in g["params"]]
    ids = [i for g in value.get("param_groups", []) for i in g.get("params", [])]
    if len(ids) != len(params):
        return value
    by_id = dict(zip(ids, params))
    state = {}
    for k, st in value.get("state", {}).items():
        p = by_id.get(k)
        if p is not None and _is_dtensor(p) and isinstance(st, dict):
            st = {n: _as_dtensor_like(t, p) if hasattr(t, "shape") and list(t.shape) == list(p.shape) else t
                  for n, t in st.items()}
        state[k] = st
    return dict(value, state=state)


# ---- files, ranks, agreement --------------------------------------------------------------------

def _dist(group: Any) -> Tuple[int, int, Any]:
    """(rank, world size, torch.distributed or None) of the job, when it has initialised one."""
    d = None
    if "torch" in sys.modules:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            d = dist
    if d is None:
        return 0, 1, None
    return d.get_rank(group), d.get_world_size(group), d


def _gather(d: Any, group: Any, obj: Any, world: int) -> List[Any]:
    if d is None:
        return [obj]
    out: List[Any] = [None] * world
    d.all_gather_object(out, obj, group=group)
    return out


def checkpoints(directory: str) -> List[Tuple[int, str]]:
    """The checkpoints in ``directory``, newest first: (step, path) of each ``ckpt-<step>.bin`` (one
    file, rank 0's) and ``ckpt-<step>/`` (a sharded one's folder)."""
    out = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for n in names:
        stem = n[5:-4] if n.startswith("ckpt-") and n.endswith(".bin") else n[5:] if n.startswith("ckpt-") else ""
        if stem.isdigit() and ("ckpt-%010d" % int(stem)) in (n, n[:-4]):
            out.append((int(stem), os.path.join(directory, n)))
    return sorted(out, reverse=True)


def _clean_stale(directory: str) -> None:
    """Temporary files and folders left by writers that died (their pid is gone)."""
    for n in os.listdir(directory):
        if not n.startswith(".ckpt-") or ".tmp" not in n:
            continue
        pid = n.rsplit(".", 1)[-1]
        if pid.isdigit():
            try:
                os.kill(int(pid), 0)
                continue
            except ProcessLookupError:
                pass
            except PermissionError:
                continue
        p = os.path.join(directory, n)
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)


def _prune(directory: str, keep: int) -> None:
    for _, p in checkpoints(directory)[keep:]:
        shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)


def save(directory: str, step: int, state: Dict[str, Any], keep: int = 3, sharded: bool = False, group: Any = None,
         rng: bool = True, halfway: Optional[Callable[[], None]] = None) -> Optional[str]:
    """Checkpoint ``state`` at ``step`` into ``directory`` (created), keeping the newest ``keep``.

    ``state`` maps names to: objects with ``state_dict()`` (a module, an optimizer, a scheduler;
    loaded back with their ``load_state_dict``; one whose ``checkpoint_per_rank`` is true, as the
    compression hooks' states, holds each rank's own state: every rank's is kept and each rank
    loads its own, at the same world size only), a ``schedc.torch.CanonicalGrads`` (its leaves, op
    and order, checked on load: resuming with others would change the weights), or plain values
    (numbers, strings, tensors, and lists, tuples and dicts of them: the data position, say).
    ``rng``: the Python, torch (CPU and CUDA) and numpy generators' states too.

    Inside a torch.distributed job it is collective over ``group``: rank 0 writes
    ``ckpt-<step>.bin`` with the whole state (DTensors gathered whole first) — or, ``sharded``,
    every rank writes its own ``rank<r>-of-<n>.bin`` (DTensors as their local shards, with their
    layout) into ``ckpt-<step>/``, which rank 0 commits with an index of every shard once all are
    durable. Returns the checkpoint's path on the rank that wrote it (every rank, sharded), else None.
    ``halfway``: a test aid (examples/elastic_train.py --die ...:ckpt) called halfway through the write."""
    rank, world, d = _dist(group)
    enc = _Enc(sharded)
    tree: Dict[str, Any] = {}
    for name, v in state.items():
        if _is_grads(v):
            tree[name] = _grads_state(v)
        elif getattr(v, "checkpoint_per_rank", False):
            tree[name] = _per_rank_state(enc, v.state_dict(), name, sharded, d, group, rank, world)
        elif hasattr(v, "state_dict") and callable(v.state_dict):
            tree[name] = enc(v.state_dict(), name)
        else:
            tree[name] = enc(v, name)
    if rng:
        tree["__rng__"] = enc(_rng_state(), "rng")
    index = {"format": "schedc-checkpoint", "version": 1, "step": int(step), "world_size": world, "rank": rank,
             "sharded": bool(sharded), "state": tree}
    blobs = [("index", json.dumps(index).encode())] + enc.blobs
    os.makedirs(directory, exist_ok=True)
    final = os.path.join(directory, "ckpt-%010d" % int(step))
    if not sharded:
        path = None
        if rank == 0:
            _clean_stale(directory)
            write_container(final + ".bin", blobs, step, halfway)
            _prune(directory, keep)
            path = final + ".bin"
        if d is not None:
            d.barrier(group)  # save returns once the checkpoint is durable, on every rank
        return path
    # sharded: a folder of shards, made whole under a temporary name and renamed by rank 0
    tmp = os.path.join(directory, ".ckpt-%010d.tmp.%s" % (int(step), _gather(d, group, os.getpid(), world)[0]))
    if rank == 0:
        _clean_stale(directory)
        os.makedirs(tmp)
    if d is not None:
        d.barrier(group)
    err = ""
    shard = os.path.join(tmp, "rank%05d-of-%05d.bin" % (rank, world))
    try:
        write_container(shard, blobs, step, halfway)
    except Exception as e:  # every rank hears of every rank's failure
        err = "rank %d: %s" % (rank, e)
    errs = [e for e in _gather(d, group, err, world) if e]
    if errs:
        raise RuntimeError("schedc.checkpoint.save: the sharded checkpoint of step %d was not written: %s"
                           % (step, "; ".join(errs[:4])))
    if rank == 0:
        crcs = {}
        for r in range(world):
            p = os.path.join(tmp, "rank%05d-of-%05d.bin" % (r, world))
            with open(p, "rb") as f:
                f.seek(-_TAIL.size, os.SEEK_END)
                crcs[os.path.basename(p)] = _TAIL.unpack(f.read(_TAIL.size))[1]
        commit = {"format": "schedc-checkpoint-commit", "step": int(step), "world_size": world, "shards": crcs}
        write_container(os.path.join(tmp, "COMMIT.bin"), [("commit", json.dumps(commit).encode())], step)
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(directory)
        _prune(directory, keep)
    if d is not None:
        d.barrier(group)
    return final


def _read_one(path: str) -> Tuple[Dict[str, Any], Dict[str, memoryview], Optional[List[Any]], Optional[List[Any]]]:
    """Verify the checkpoint at path: its index, blobs, and for a sharded one every shard and the
    commit's record of them. Returns (index, blobs of this rank's file or rank 0's, shard blobs, shard
    indexes)."""
    if not os.path.isdir(path):
        step, blobs = read_container(path)
        idx = _index(path, blobs, step)
        return idx, blobs, None, None
    cpath = os.path.join(path, "COMMIT.bin")
    if not os.path.exists(cpath):
        raise CheckpointError(path, "no COMMIT.bin: the sharded checkpoint was never committed")
    step, cb = read_container(cpath)
    commit = json.loads(bytes(cb["commit"]))
    shards, idxs = [], []
    for r in range(commit["world_size"]):
        name = "rank%05d-of-%05d.bin" % (r, commit["world_size"])
        sp = os.path.join(path, name)
        if not os.path.exists(sp):
            raise CheckpointError(sp, "missing: the commit lists it")
        s, blobs = read_container(sp)
        with open(sp, "rb") as f:
            f.seek(-_TAIL.size, os.SEEK_END)
            if _TAIL.unpack(f.read(_TAIL.size))[1] != commit["shards"][name]:
                raise CheckpointError(sp, "not the shard its commit recorded (another CRC32C)")
        shards.append(blobs)
        idxs.append(_index(sp, blobs, s))
    return idxs[0], shards[0], shards, idxs


def _index(path: str, blobs: Dict[str, memoryview], step: int) -> Dict[str, Any]:
    if "index" not in blobs:
        raise CheckpointError(path, "no index blob: a checkpoint of train_mlp.c's or another program's, not of "
                                    "schedc.checkpoint.save")
    idx = json.loads(bytes(blobs["index"]))
    if idx.get("format") != "schedc-checkpoint" or idx.get("step") != step:
        raise CheckpointError(path, "its index is not a schedc checkpoint's of step %d" % step)
    return idx


def load(directory: str, state: Dict[str, Any], group: Any = None, rng: bool = True,
         log: Optional[Callable[[str], None]] = None) -> Optional[Dict[str, Any]]:
    """Load the newest good checkpoint of ``directory`` into ``state`` (as given to ``save``):
    objects get ``load_state_dict``, a CanonicalGrads is checked against its saved leaves and
    order; returns ``{"step": ..., "path": ..., name: value}`` with the plain values, or None when
    the directory holds no checkpoint. Every file is verified (every blob's CRC32C and the file's);
    a newer one that fails is refused — ``log`` (default: stderr) names it and what failed — and the
    one before it is tried; none good raises CheckpointError. Collective in a torch.distributed job:
    the ranks agree on the newest checkpoint every one of them verified. A sharded checkpoint loads
    at any world size (each rank reads every shard and takes its own part of each DTensor).
    ``rng``: the generators' states are restored (rank 0's on every rank, or each rank's own from a
    sharded checkpoint of the same world size)."""
    say = log or (lambda m: print("schedc.checkpoint: " + m, file=sys.stderr, flush=True))
    rank, world, d = _dist(group)
    cands = checkpoints(directory)
    bad: Dict[int, str] = {}

    read: Dict[int, Any] = {}  # the one checkpoint read and verified last, kept for loading it

    def first_good(limit: Optional[int]) -> Optional[int]:
        for s, p in cands:
            if limit is not None and s > limit:
                continue
            if s in bad:
                continue
            read.clear()
            try:
                read[s] = _read_one(p)
                return s
            except CheckpointError as e:
                bad[s] = str(e)
        return None

    mine = first_good(None)
    target = mine
    for _ in range(len(cands) + 1):  # the ranks agree: the newest step good on every rank
        got = _gather(d, group, -1 if target is None else target, world)
        agreed = min(got)
        if all(g == agreed for g in got):
            target = None if agreed < 0 else agreed
            break
        target = first_good(agreed) if agreed >= 0 else None
    if rank == 0:
        for s, why in sorted(bad.items(), reverse=True):
            if target is None or s > target:
                say("refusing checkpoint %s; %s" % (why, "using the one before it" if target is not None else
                                                   "no good one is left"))
    if target is None:
        if cands:
            raise CheckpointError(directory, "no good checkpoint: " + "; ".join(bad[s] for s, _ in cands if s in bad))
        return None
    path = dict(cands)[target]
    idx, blobs, shards, idxs = read.pop(target) if target in read else _read_one(path)
    out: Dict[str, Any] = {"step": idx["step"], "path": path}
    tree = idx["state"]
    for name, enc in tree.items():
        if name == "__rng__":
            continue
        obj = state.get(name)
        if isinstance(enc, dict) and "__per_rank__" in enc:  # each rank's own (checkpoint_per_rank)
            if idx.get("world_size") != world:
                raise CheckpointError(path, "its '%s' holds the state of each of %s ranks (one rank's each: error "
                                            "feedback's residuals); resuming with %d ranks would lose or invent some: "
                                            "resume with %s" % (name, idx.get("world_size"), world, idx.get("world_size")))
            if idxs:
                value = _decode(idxs[rank]["state"][name]["__per_rank__"][0], shards[rank], path)
            else:
                value = _decode(enc["__per_rank__"][rank], blobs, path)
            if obj is not None and hasattr(obj, "load_state_dict"):
                obj.load_state_dict(value)
            else:
                out[name] = value
            continue
        sub = [i["state"][name] for i in idxs] if idxs else None
        value = _decode(enc, blobs, path, shards, sub)
        if _is_grads(obj):
            live = _grads_state(obj)
            for k in ("leaves", "op", "exact", "dtype", "count"):
                if value.get(k) != live[k]:
                    raise CheckpointError(path, "its CanonicalGrads '%s' has %s=%r, this job's %r: resuming would change "
                                                "the weights" % (name, k, value.get(k), live[k]))
        elif obj is not None and hasattr(obj, "load_state_dict") and callable(obj.load_state_dict):
            if hasattr(obj, "param_groups"):
                value = _fit_optimizer(value, obj)
            else:
                value = _fit(value, obj.state_dict())
            obj.load_state_dict(value)
        else:
            out[name] = value
    if rng and "__rng__" in tree:
        if idxs and idx.get("world_size") == world:  # each rank's own generators
            mine_idx = idxs[rank]
            _set_rng_state(_decode(mine_idx["state"]["__rng__"], shards[rank], path))
        else:
            _set_rng_state(_decode(tree["__rng__"], blobs, path))
    return out
