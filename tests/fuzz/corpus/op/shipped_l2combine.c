// op: l2combine
/*
 * l2combine.c — two partial L2 norms into the norm of the union: sqrt(a*a + b*b) (f32), for a
 * gradient-norm clip across ranks that reduces norms instead of squared sums. sqrtf is correctly
 * rounded on both sides (sqrt.rn.f32 on the GPU), and a*a + b*b is the same sum in either order;
 * no fma (--fmad=false, -ffp-contract=off).
 * schedc check-op ops/shipped/l2combine.c:l2combine
 */
#include <math.h>

float l2combine(float a, float b) { return sqrtf(a * a + b * b); }
