# errors.py — schedc.Error, what every failed libschedc call raises: the status's name and value and
# schedc_errmsg()'s detail, and _check, the one place a C status becomes that exception.
"""The exception of the schedc binding (``schedc.Error``)."""
from __future__ import annotations

from . import _lib
from ._lib import lib


class Error(RuntimeError):
    """A failed libschedc call: ``status`` is the status name (``"SCHEDC_EMISMATCH"``), ``code`` its
    value, ``message`` schedc_errmsg() (verifier rejections: one diagnostic per line)."""

    def __init__(self, code: int, message: str, what: str = "") -> None:
        self.code = code
        self.status = _lib.STATUS_NAMES[code] if 0 <= code < len(_lib.STATUS_NAMES) else "SCHEDC_%d" % code
        self.message = message
        s = lib.schedc_status_str(code)
        head = "%s: %s (%s)" % (what, self.status, s.decode() if s else "?") if what else \
            "%s (%s)" % (self.status, s.decode() if s else "?")
        super().__init__(head + (": " + message if message else ""))


def _check(st: int, what: str) -> None:
    if st != 0:
        raise Error(st, _lib.errmsg(), what)
