/*
 * cuda_args.c — the kernels' parameter block (cuda_group.h): filled field by field from the
 * ABI's list (codegen/cuda_abi.h), each word where that list puts it, so the runtime and the
 * emitted sc_args cannot drift; and the sizes of the mirror slots a split plan stages through.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "cuda_group.h"

void sc_cu_args_init(cu_args *a, int N, unsigned variant) {
  memset(a->P, 0, sizeof a->P);
  for (int f = 0; f < SC_ABI_NFIELDS; f++) a->at[f] = sc_cuda_abi_index(f, N, variant);
}

void sc_cu_arg(cu_args *a, sc_abi_field f, uint64_t v) {
  assert(sc_cuda_abi_kind(f) == SC_ABI_SCALAR);
  if (a->at[f] >= 0) a->P[a->at[f]] = v;
}

void sc_cu_arg_ptr(cu_args *a, sc_abi_field f, int r, const void *p) {
  assert(sc_cuda_abi_kind(f) == SC_ABI_TABLE);
  if (a->at[f] >= 0) a->P[a->at[f] + r] = (uint64_t)(uintptr_t)p;
}

size_t sc_cu_mstride(size_t K, uint32_t nchunks, size_t esz) {
  size_t vw = 16 / esz;
  return ((K + nchunks - 1) / nchunks + 2 * vw) / vw * vw;
}

size_t sc_cu_mir_bytes(size_t slots, size_t mstride, size_t esz, int nblk, size_t *sum_off) {
  *sum_off = (slots * mstride * esz + 16 + 255) / 256 * 256;
  return *sum_off + slots * (size_t)nblk * 8;
}
