/*
 * clang_abi_ours.c — the values and sizes of ops/clang_abi.h, in the order of clang_abi_list.h
 * (compared with clang-c/Index.h's by test_clang_abi.c).
 */
#include "clang_abi.h"
#include "clang_abi_list.h"

extern const long sc_abi_ours[];
#define V(n) (long)(n),
#define S(t) (long)sizeof(t),
const long sc_abi_ours[] = {SC_CLANG_CONSTANTS(V) SC_CLANG_TYPES(S) -1};
