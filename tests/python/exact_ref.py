# exact_ref.py — an independent evaluation of exact mode (docs/determinism.md "Exact mode") in
# Python's exact rationals (fractions.Fraction): the grid from the largest input, each summand
# rounded onto it (nearest, ties to even), the integers summed, the sum rounded once to the
# output format by an exact search (no floating-point arithmetic on the way). The tests compare
# schedc's exact results with this bit for bit.
import math
from fractions import Fraction

import torch

# precision (significand bits incl. the implicit one), smallest and largest normal exponent
FORMATS = {torch.float32: (24, -126, 127), torch.float16: (11, -14, 15), torch.bfloat16: (8, -126, 127)}


def floor_log2(a: Fraction) -> int:
    """floor(log2 a) for a > 0, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_to(v: Fraction, dtype: torch.dtype) -> float:
    """v rounded once to the format (nearest, ties to even; subnormals; past the largest: +-inf);
    0 gives +0. The result as a Python float (exactly representable: the format is narrower)."""
    if v == 0:
        return 0.0
    p, emin, emax = FORMATS[dtype]
    a = abs(v)
    e = max(floor_log2(a), emin)  # below the normals: the subnormals' fixed unit
    ulp = Fraction(2) ** (e - p + 1)
    m = round(a / ulp)  # Fraction.__round__: to nearest, ties to even
    r = m * ulp
    if r >= Fraction(2) ** (emax + 1):
        return math.copysign(math.inf, v)
    return float(r) if v > 0 else -float(r)


def grid(summands, headroom_of: int) -> int:
    """The grid exponent g (integer q stands for q*2^g): E - 61 + ceil(log2 H), E the largest
    floor(log2|x|) of a finite nonzero input of any summand, H the summand count (ranks, or
    leaves in all for exact leaves). None when every input is zero."""
    es = [floor_log2(abs(Fraction(x))) for s in summands for x in s if x != 0]
    if not es:
        return None
    h = (headroom_of - 1).bit_length()  # ceil(log2 H)
    return max(es) - 61 + h


def exact_sum(summands, dtype: torch.dtype, avg: bool = False) -> torch.Tensor:
    """schedc's exact sum (avg: divided by the summand count) of equal-length summands (each a
    1-D tensor of dtype, finite), element by element, as a tensor of dtype."""
    vals = [[float(x) for x in s.to(torch.float64)] for s in summands]
    H = len(vals)
    g = grid(vals, H)
    out = []
    for i in range(len(vals[0])):
        if g is None:
            out.append(0.0)
            continue
        unit = Fraction(2) ** g
        q = sum(round(Fraction(s[i]) / unit) for s in vals)  # each rounded on its own, ties to even
        v = q * unit
        out.append(round_to(v / H if avg else v, dtype))
    return torch.tensor(out, dtype=torch.float64).to(dtype)


def real_sum_rounded(summands, dtype: torch.dtype) -> torch.Tensor:
    """The exact real sum of the inputs, rounded once: what exact mode gives when every input is
    on the grid (nothing rounded on the way in)."""
    vals = [[Fraction(float(x)) for x in s.to(torch.float64)] for s in summands]
    return torch.tensor([round_to(sum(col), dtype) for col in zip(*vals)], dtype=torch.float64).to(dtype)
