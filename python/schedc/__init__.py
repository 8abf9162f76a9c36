# schedc — Python binding of libschedc (ctypes): verified plans, and communicators whose
# collectives give the bits the plan's proven reduction trees define. Nothing the C library does
# is re-implemented here. This file only gathers the public names; each lives in its module:
# errors (Error), names (DTYPES, OPS, EXACT_DTYPES, WIRES), plans (Plan, PlanInfo, check, canonical_plan),
# buffers (digest), communicators (Comm, unique_id, uid_net), buildinfo (__version__, revision, info).
"""Deterministic collective communication: a thin ctypes binding over libschedc.

``Plan`` loads and verifies a schedule (a shipped one by name, e.g. ``"direct"``), ``Comm`` is one
rank's communicator; ``schedc.torch`` bootstraps one inside a ``torch.distributed`` job and adds a
DDP communication hook and canonical micro-batch gradient accumulation (docs/python.md).
``schedc.info()`` (``python -m schedc info``) says what the build contains and finds here.
"""
from .buffers import digest
from .buildinfo import __version__, info, revision
from .communicators import Comm, uid_net, unique_id
from .errors import Error
from .names import DTYPES, EXACT_DTYPES, OPS, WIRES
from .plans import Plan, PlanInfo, canonical_plan, check

__all__ = ["Error", "Plan", "PlanInfo", "check", "Comm", "unique_id", "uid_net", "digest", "canonical_plan", "DTYPES", "OPS",
           "EXACT_DTYPES", "WIRES", "info", "revision", "__version__"]
