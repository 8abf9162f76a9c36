/*
 * test_clang_abi.c — ops/clang_abi.h (the checker's own declarations of libclang) against the
 * real clang-c/Index.h: every constant and every struct size of clang_abi_list.h, named when it
 * differs. Built only where CMake finds clang-c/Index.h (libclang-16-dev).
 */
#include <clang-c/Index.h>
#include <stdio.h>

#include "clang_abi_list.h"

extern const long sc_abi_ours[];
#define V(n) (long)(n),
#define S(t) (long)sizeof(t),
#define N(n) #n,
static const long theirs[] = {SC_CLANG_CONSTANTS(V) SC_CLANG_TYPES(S) -1};
static const char *const names[] = {SC_CLANG_CONSTANTS(N) SC_CLANG_TYPES(N) NULL};

int main(void) {
  int bad = 0, n = 0;
  for (; names[n]; n++)
    if (sc_abi_ours[n] != theirs[n]) {
      printf("FAIL: %s is %ld in ops/clang_abi.h, %ld in clang-c/Index.h\n", names[n], sc_abi_ours[n], theirs[n]);
      bad++;
    }
  printf("%d passed, %d failed\n", n - bad, bad);
  return bad != 0;
}
