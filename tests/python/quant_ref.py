# quant_ref.py — an independent evaluation of quantized sums (docs/compression.md) in Python's exact
# rationals (fractions.Fraction), nothing shared with runtime/core/quant.c or schedc/compress.py: the
# grid found by search (the finest power of two on which every input of every summand rounds, ties to
# even, to an integer of at most wire - 1 - ceil(log2 H) bits), the integers summed, the sum (avg:
# divided by H) rounded once by exact_ref.round_to. Also top-k's reference (the ranks' k largest
# magnitudes, ties by index, summed by exact_ref.exact_sum).
import math
from fractions import Fraction

import torch

from exact_ref import exact_sum, floor_log2, round_to


def grid(vals, wire: int, H: int):
    """The grid exponent g for the summands' values (lists of floats), or None (all zero)."""
    m = wire - 1 - (H - 1).bit_length()
    nz = [abs(Fraction(x)) for s in vals for x in s if x != 0]
    if not nz:
        return None
    g = max(floor_log2(a) for a in nz) - m
    while any(round(a / Fraction(2) ** g) > 2 ** m - 1 for a in nz):  # Fraction rounding: ties to even
        g += 1
    return g


def quant_sum(summands, dtype: torch.dtype, wire: int, avg: bool = False):
    """(result tensor of dtype, g, the integers per summand) of the quantized sum of equal-length
    1-D tensors of dtype."""
    vals = [[float(x) for x in s.to(torch.float64)] for s in summands]
    H = len(vals)
    g = grid(vals, wire, H)
    unit = Fraction(2) ** (g or 0)
    qs = [[round(Fraction(x) / unit) for x in s] for s in vals]
    out = []
    for i in range(len(vals[0])):
        S = sum(q[i] for q in qs)
        assert abs(S) < 2 ** (wire - 1)
        out.append(round_to(S * unit / H if avg else S * unit, dtype))
    return torch.tensor(out, dtype=torch.float64).to(dtype), g, qs


def topk_sum(summands, dtype: torch.dtype, frac: float, avg: bool = False):
    """Top-k's result: each summand's k = ceil(frac * count) largest magnitudes (ties: lower index)
    kept, the rest zeroed, summed as exact mode sums (exact_ref.exact_sum)."""
    sparse = []
    for s in summands:
        vals = [abs(float(x)) for x in s.to(torch.float64)]
        k = min(len(vals), math.ceil(frac * len(vals)))  # the library's ceil(frac * count), in doubles
        keep = sorted(range(len(vals)), key=lambda i: (-vals[i], i))[:k]
        z = torch.zeros_like(s)
        z[keep] = s[keep]
        sparse.append(z)
    return exact_sum(sparse, dtype, avg)
