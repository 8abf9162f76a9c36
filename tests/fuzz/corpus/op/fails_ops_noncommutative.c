// op: firstwins
// expect-exit: 1
// expect: noncommutative.c:9:7: 'firstwins' is not commutative: firstwins(a, b) = 
// expect: the proven trees combine two operands in either order
#include <math.h>

/* Largest magnitude, keeping the sign of the larger one: at a tie of magnitudes (1 and -1) the
 * first operand wins, so op(1, -1) = 1 but op(-1, 1) = -1. */
float firstwins(float a, float b) { return fabsf(a) >= fabsf(b) ? a : b; }
