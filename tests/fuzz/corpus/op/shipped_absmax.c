// op: absmax
/*
 * absmax.c — the largest magnitude, |a| max |b| (f32): the amax that FP8 scaling needs across
 * ranks. fabsf drops the sign, so equal magnitudes of opposite signs give the same bits in either
 * order; fmaxf ignores a NaN operand (a NaN result becomes the default NaN).
 * schedc check-op ops/shipped/absmax.c:absmax
 */
#include <math.h>

float absmax(float a, float b) { return fmaxf(fabsf(a), fabsf(b)); }
