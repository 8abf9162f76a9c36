# buildinfo.py — the version and the build report from Python: __version__ is the library's own
# (schedc_version), and info() is schedc_info's report (`schedc info`) with the Python side added:
# the interpreter, this package's folder, the libschedc it loaded, and torch's and numpy's versions
# as installed (read from their metadata: nothing is imported).
"""``schedc.__version__``, ``schedc.revision()`` and ``schedc.info()`` (``python -m schedc info``)."""
from __future__ import annotations

import ctypes
import importlib.metadata
import json as _json
import os
import sys
from typing import Any, Dict, Union

from . import _lib
from ._lib import lib
from .errors import _check

__version__ = _lib.version()


def revision() -> str:
    """The git revision libschedc was built from (schedc_revision), "unknown" outside a checkout."""
    return lib.schedc_revision().decode()


def _python() -> Dict[str, str]:
    out = {"version": sys.version.split()[0], "executable": sys.executable,
           "package": os.path.dirname(os.path.abspath(__file__)),
           "libschedc": os.path.realpath(getattr(lib, "_name", "") or "")}
    for dist in ("torch", "numpy"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = ""
    return out


def info(as_json: bool = False) -> Union[str, Dict[str, Any]]:
    """What this build contains and finds on this machine (schedc_info: backends, optional libraries,
    vector path, CPUs and NUMA, GPUs, kernel cache, /dev/shm, the variables set), plus a ``python``
    section: the text to paste into a bug report, or with ``as_json=True`` the JSON object as a
    dict (its keys: docs/cli.md, "schedc info")."""
    p = ctypes.c_void_p()
    _check(lib.schedc_info(1 if as_json else 0, ctypes.byref(p)), "info")
    try:
        text = ctypes.string_at(p.value).decode(errors="replace")
    finally:
        lib.schedc_free(p)
    py = _python()
    if as_json:
        d = _json.loads(text)
        d["python"] = py
        return d
    lines = ["python: %s (%s)" % (py["version"], py["executable"]),
             "  package: %s" % py["package"],
             "  libschedc loaded: %s%s" % (py["libschedc"], "  (SCHEDC_LIBRARY)" if os.environ.get("SCHEDC_LIBRARY") else ""),
             "  torch: %s" % (py["torch"] or "not installed"),
             "  numpy: %s" % (py["numpy"] or "not installed")]
    return text + "\n".join(lines) + "\n"
