// op: softmaxish
// expect-exit: 1
// expect: expf.c:10:10: call to expf: transcendental functions are not allowed, because the CPU's libm and CUDA's device library round them differently, so CPU and GPU bits would differ
// expect: expf.c:10:20: call to logf: transcendental functions are not allowed
#include <math.h>

/* log-sum-exp would be commutative, but expf/logf are rounded differently by glibc and CUDA
 * (neither is correctly rounded), so the GPU's bits would differ from the CPU's. */
float softmaxish(float a, float b) {
  return expf(a) + logf(b) + expf(b) + logf(a);
}
