// op: or64
/*
 * or64.c — bitwise OR of 64-bit masks (i64): which ranks saw a flag, which experts were used.
 * schedc check-op ops/shipped/or64.c:or64
 */
#include <stdint.h>

int64_t or64(int64_t a, int64_t b) { return a | b; }
