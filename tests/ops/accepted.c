/* accepted.c — an operator using what the checker allows: a helper of the same file, if/else,
 * casts between the allowed types, shifts, bitwise and conditional operators (tests/ops/test_ops_cli.sh). */
#include <stdint.h>
static int32_t helper(int32_t x, int32_t s) { if (x < 0) { return -x; } else return x << s; }
int32_t combo(int32_t a, int32_t b) {
  int32_t m = (int32_t)((int64_t)a * b >> 3);
  return helper(a, 1) + helper(b, 1) + (a ^ b) - (a & b) + (m != m ? 1 : 0);
}
// op: combo (the function tests/fuzz/fuzz_op.c checks in this file)
