// op: mean
// expect-exit: 1
// expect: intdiv.c:8:45: integer '/': division by zero traps on the CPU but gives a value on the GPU
/* Integer division is rejected (a zero divisor traps on the CPU, not on the GPU); the float
 * division below in half() is fine. */
#include <stdint.h>
static float half(float x) { return x / 2.0f; }
int32_t mean(int32_t a, int32_t b) { return (a + b) / 2 + (int32_t)half(0.0f); }
