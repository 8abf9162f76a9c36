/*
 * c_math.c — an operator that calls a double math function on floats, as C reads it: fma here is
 * the double fma (one rounding to double, then one to float on return), not CUDA C++'s float
 * overload fmaf. Where a*b is a float midpoint and the tiny c tips it, the two differ
 * (test_ops.c: K_FMA); the generated CUDA must give C's bits. Test input, not shipped.
 */
#include <math.h>

float fma_tiny(float a, float b) { return fma(a, b, 0x1p-100f); }
