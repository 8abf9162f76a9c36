// op: rec
// expect-exit: 1
// expect: recursion.c:8:36: recursion: 'rec' calls 'rec' while it is running: operators may not recurse
/* Recursion is rejected (CUDA's stack is small and fixed). */
#include <stdint.h>

int32_t rec(int32_t a, int32_t b) {
  return a <= 0 ? b : b <= 0 ? a : rec(a - 1, b - 1) + 2;
}
