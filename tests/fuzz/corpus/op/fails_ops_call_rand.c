// op: noisy
// expect-exit: 1
// expect: call_rand.c:8:22: call to rand: an operator may call only functions defined in its file and fabs, fmin, fmax, copysign, sqrt, fma, floor, ceil, trunc, rint
#include <stdlib.h>

/* A random tie-break is not a function of the operands. */
float noisy(float a, float b) {
  return a > b ? a : rand() % 2 ? a : b;
}
