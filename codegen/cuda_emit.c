/*
 * cuda_emit.c — the CUDA source generator (see cuda_emit.h). A rank runs as one or more thread
 * blocks; block b of every rank owns part b of every chunk (tiles cut at 16-byte boundaries and
 * dealt to the blocks in turn) with its own counters, so blocks pipeline independently. Each
 * block walks the rank's write groups in order: thread 0 spins on the counters the group needs
 * (RAW on source versions, WAR on its own
 * reads) with a clock64 budget, the block computes its part with 16-byte vectors, then thread 0
 * fences, counts its reads and publishes the cell's version. The arithmetic is the CPU kernels':
 * IEEE round-to-nearest, NaN results as the default NaN, min/max with NaN winning and -0 < +0,
 * integers wrapping; compile with --fmad=false. Two variants on top: checksums (sc_seal after
 * each publishing write, sc_check before each read) and a plan split across nodes (one phase per
 * launch, cross-node sources read from mirror slots; codegen/cuda_split.h).
 */
#include "cuda_emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opreg.h"

typedef struct sb { char *p; size_t len, cap; int oom; } sb;

static void put(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if (b->p && b->len + (size_t)k < b->cap) { b->len += (size_t)k; return; }
    size_t ncap = b->cap ? b->cap * 2 : 1 << 14;
    while (ncap < b->len + (size_t)k + 1) ncap *= 2;
    char *np = realloc(b->p, ncap);
    if (!np) { b->oom = 1; return; }
    b->p = np;
    b->cap = ncap;
  }
}

/* Element type of the working buffer in device code: the accumulation type of a reduction
 * (f16/bf16 accumulate in f32), or, for a plan that only copies (allgather, broadcast), an
 * unsigned type of the element's size, so every bit pattern (NaN payloads too) moves untouched. */
static const char *elem_type(int dtype, int copy_only) {
  if (copy_only) {
    size_t sz = sc_dtype_size(dtype);
    return sz == 2 ? "unsigned short" : sz == 4 ? "unsigned int" : "unsigned long long";
  }
  switch (dtype) {
  case SCHEDC_F64: return "double";
  case SCHEDC_I32: return "int";
  case SCHEDC_I64: return "long long";
  default: return "float"; /* f32, and f16/bf16 accumulate in f32 */
  }
}

/* The default NaN of a float accumulation type, as a device expression: every NaN result is it. */
static const char *default_nan(int dtype) {
  return dtype == SCHEDC_F64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
}

static void emit_op(sb *b, int dtype, int op, int copy_only) {
  int f64 = dtype == SCHEDC_F64, isint = dtype == SCHEDC_I32 || dtype == SCHEDC_I64;
  const sc_opdef *custom = sc_opreg_get(op);
  if (custom && !copy_only) { /* the checked operator's own __device__ functions (docs/ops.md) */
    put(b, "%s", custom->cuda);
    put(b, "__device__ __forceinline__ sc_acc sc_op(sc_acc a, sc_acc b) { return sc_custom_op(a, b); }\n\n");
    return;
  }
  put(b, "__device__ __forceinline__ sc_acc sc_op(sc_acc a, sc_acc b) {\n");
  if (copy_only) {
    put(b, "  (void)b;\n  return a; /* a copy-only plan never combines */\n}\n\n");
    return;
  }
  if (isint) {
    const char *u = dtype == SCHEDC_I32 ? "unsigned int" : "unsigned long long";
    if (op == SCHEDC_PROD) put(b, "  return (sc_acc)((%s)a * (%s)b); /* wraps */\n", u, u);
    else if (op == SCHEDC_MIN) put(b, "  return a < b ? a : b;\n");
    else if (op == SCHEDC_MAX) put(b, "  return a > b ? a : b;\n");
    else put(b, "  return (sc_acc)((%s)a + (%s)b); /* wraps */\n", u, u);
  } else {
    const char *nan = default_nan(dtype);
    const char *bits = f64 ? "__double_as_longlong" : "__float_as_int";
    const char *from = f64 ? "__longlong_as_double" : "__int_as_float";
    if (op == SCHEDC_MIN || op == SCHEDC_MAX) {
      put(b, "  if (a != a || b != b) return %s; /* NaN wins */\n", nan);
      if (op == SCHEDC_MIN) put(b, "  if (a < b) return a;\n  if (b < a) return b;\n  return %s(%s(a) | %s(b)); /* -0 < +0 */\n", from, bits, bits);
      else put(b, "  if (a > b) return a;\n  if (b > a) return b;\n  return %s(%s(a) & %s(b)); /* +0 > -0 */\n", from, bits, bits);
    } else {
      put(b, "  sc_acc r = a %c b; /* add.rn / mul.rn: --fmad=false */\n", op == SCHEDC_PROD ? '*' : '+');
      put(b, "  return r != r ? %s : r; /* one NaN, so a+b and b+a agree bit for bit */\n", nan);
    }
  }
  put(b, "}\n\n");
}

/* Checksum mode: the sum of a cell part is the sum, mod 2^64, of mix(element bits, element index):
 * mix is a bijection of the bits for a given index, so any change of any one element changes the
 * sum, and it adds up in any order, so a block computes it in parallel with the same result on
 * the writer and the reader. */
static void emit_checksums(sb *b) {
  put(b,
      "/* Checksums (SCHEDC_VERIFY=checksum). sc_sum_part: the block's sum over its part (sc_tile0) of\n"
      " * chunk c of the operand at base (kind 0: indexed like the working buffer; 1: a slot holding the\n"
      " * chunk, a mirror); the part's element `at` (counted across its tiles) is read with the bits\n"
      " * `mask` flipped (injection; at = ~0: none). One block-wide reduction per part, not per tile. */\n"
      "__device__ __noinline__ sc_u64 sc_sum_part(const sc_args &a, const sc_acc *base, int kind, int c, int blk, int nblk,\n"
      "                                         sc_u64 at, sc_u64 mask) {\n"
      "  __shared__ sc_u64 tot;\n"
      "  __syncthreads(); /* the part's writes by this block, and the last use of tot, are done */\n"
      "  if (threadIdx.x == 0) tot = 0;\n"
      "  __syncthreads();\n"
      "  sc_u64 s = 0, pos = 0;\n"
      "  for (sc_tile t = sc_tile0(a, c, blk); t.x0 < t.x1; sc_tile_next(t, nblk)) {\n"
      "    const sc_acc *p = base + (kind ? sc_coff(t) : t.x0);\n"
      "    sc_u64 n = t.x1 - t.x0;\n"
      "    for (sc_u64 i = threadIdx.x; i < n; i += blockDim.x) {\n"
      "      union { sc_acc v; sc_u64 u; } w;\n"
      "      w.u = 0;\n"
      "      w.v = p[i];\n"
      "      if (pos + i == at) w.u ^= mask;\n"
      "      s += (w.u ^ ((t.x0 + i) * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;\n"
      "    }\n"
      "    pos += n;\n"
      "  }\n"
      "  atomicAdd(&tot, s);\n"
      "  __syncthreads();\n"
      "  return tot;\n"
      "}\n\n"
      "/* Writer: the sum of its part of a cell, stored before the version is published (fenced there). */\n"
      "__device__ __noinline__ void sc_seal(const sc_args &a, int rank, sc_u64 cell, const sc_acc *buf, int c, int blk,\n"
      "                                     int nblk) {\n"
      "  sc_u64 s = sc_sum_part(a, buf, 0, c, blk, nblk, ~0ull, 0);\n"
      "  if (threadIdx.x == 0) a.sum[rank][cell] = s;\n"
      "}\n\n"
      "/* Reader: the sum of what it loads from src's part must be the one src published (*sum), before any\n"
      " * use. A mismatch is read once more with repair (a transient fault: recorded as repaired in\n"
      " * err[8..15] once per call), else recorded in err[0..7] (code 2) and every block stops. */\n"
      "__device__ __noinline__ bool sc_check(const sc_args &a, int src, const sc_u64 *sum, const sc_acc *base, int kind,\n"
      "                                      int chunk, int blk, int nblk, int rank, int step) {\n"
      "  sc_u64 want = *(volatile const sc_u64 *)sum, at = ~0ull, mask = 0, n = 0;\n"
      "  if (a.flip_src == src && a.flip_dst == rank && a.flip_step == step && a.flip_chunk == chunk && blk == 0) {\n"
      "    for (sc_tile t = sc_tile0(a, chunk, blk); t.x0 < t.x1; sc_tile_next(t, nblk)) n += t.x1 - t.x0;\n"
      "    sc_u64 nb = n * 8 * sizeof(sc_acc), bits = !n ? 0 : a.flip_bit < 0 ? nb / 2 + 3 : (sc_u64)a.flip_bit %% nb;\n"
      "    at = n ? bits / (8 * sizeof(sc_acc)) : ~0ull;\n"
      "    mask = n ? 1ull << (bits %% (8 * sizeof(sc_acc))) : 0;\n"
      "  }\n"
      "  sc_u64 got = sc_sum_part(a, base, kind, chunk, blk, nblk, at, mask);\n"
      "  if (got == want) return true;\n"
      "  sc_u32 call = (sc_u32)(a.epoch >> %d);\n"
      "  if (a.repair && sc_sum_part(a, base, kind, chunk, blk, nblk, ~0ull, 0) == want) {\n"
      "    if (threadIdx.x == 0) {\n"
      "      sc_u32 prev = *(volatile sc_u32 *)(a.err + 8);\n"
      "      if (prev != call && atomicCAS(a.err + 8, prev, call) == prev) {\n"
      "        a.err[9] = rank; a.err[10] = step; a.err[11] = src; a.err[12] = chunk;\n"
      "        a.err[13] = (sc_u32)got; a.err[14] = (sc_u32)want;\n"
      "      }\n"
      "    }\n"
      "    return true;\n"
      "  }\n"
      "  if (threadIdx.x == 0 && atomicCAS(a.err, 0u, 2u) == 0u) {\n"
      "    a.err[1] = rank; a.err[2] = step; a.err[3] = src; a.err[4] = chunk;\n"
      "    a.err[5] = (sc_u32)got; a.err[6] = (sc_u32)want;\n"
      "  }\n"
      "  return false;\n"
      "}\n\n",
      SC_CUDA_EPOCH_BITS);
}

static void emit_prelude(sb *b, const sc_ir *ir, int dtype, int op, int copy_only, int check, int split) {
  put(b, "typedef unsigned int sc_u32;\ntypedef unsigned long long sc_u64;\ntypedef %s sc_acc;\n",
      elem_type(dtype, copy_only));
  put(b, "#define SC_NRANKS %u\n#define SC_NCHUNKS %uull\n#define SC_VW (16 / sizeof(sc_acc))\n", ir->nranks,
      ir->nchunks);
  put(b, "#define SC_LO(K, c) ((K) * (sc_u64)(c) / SC_NCHUNKS) /* chunk c is [SC_LO(c), SC_LO(c+1)) */\n");
  put(b, "#define SC_INFLIGHT 8 /* 16-byte loads per thread in one pass of sc_chain */\n");
  put(b, "struct alignas(16) sc_vec { sc_acc v[SC_VW]; };\n\n");
  put(b,
      "/* One call, the same for every rank (one fused launch or one launch per rank): the runtime's\n"
      " * parameter block, word for word (codegen/cuda_abi.h). Counters are per (cell, block):\n"
      " * ver[r][c * nblk + b], reads[r][c * nblk + b]; a call's values start at `epoch` (call number\n"
      " * << %d), so nothing is reset between calls and a stale value from an earlier call never\n"
      " * satisfies a wait. temp[r] holds tstride elements per (temp slot, block): at least the tiles\n"
      " * of the longest part of a chunk plus a vector (sc_poff). */\n"
      "struct sc_args {\n",
      SC_CUDA_EPOCH_BITS);
  unsigned variant = (check ? SC_ABI_CHECK : 0) | (split ? SC_ABI_SPLIT : 0);
  static const struct { const char *name, *type, *doc; int table; } field[] = {
#define X(name, kind, type, variant, doc) {#name, type, doc, SC_ABI_##kind == SC_ABI_TABLE},
      SC_CUDA_ABI_FIELDS(X)
#undef X
  };
  for (int f = 0; f < SC_ABI_NFIELDS; f++) {
    if (!sc_cuda_abi_has(f, variant)) continue;
    char decl[64];
    size_t t = strlen(field[f].type);
    snprintf(decl, sizeof decl, "%s%s%s%s;", field[f].type, field[f].type[t - 1] == '*' ? "" : " ", field[f].name,
             field[f].table ? "[SC_NRANKS]" : "");
    if (*field[f].doc) put(b, "  %-25s /* %s */\n", decl, field[f].doc);
    else put(b, "  %s\n", decl);
  }
  put(b, "};\n");
  int words = sc_cuda_abi_index(SC_ABI_NFIELDS, (int)ir->nranks, variant);
  put(b, "static_assert(sizeof(sc_args) == %d * 8, \"the runtime fills %d words (cuda_abi.h)\");\n\n", words, words);
  emit_op(b, dtype, op, copy_only);
  put(b,
      "/* Thread 0 waits until *ctr >= want (then fences: acquire), within `budget` cycles; on timeout or\n"
      " * a failure raised elsewhere it records (rank, step, peer) once and every thread of the block\n"
      " * returns false. */\n"
      "__device__ __noinline__ bool sc_wait(const sc_u64 *ctr, sc_u64 want, const sc_args &a, int rank, int step,\n"
      "                                     int peer) {\n"
      "  __shared__ int ok;\n"
      "  if (threadIdx.x == 0) {\n"
      "    ok = 1;\n"
      "    long long t0 = clock64();\n"
      "    for (unsigned ns = 32; *(volatile const sc_u64 *)ctr < want; ns = ns < 256 ? 2 * ns : ns) {\n"
      "      if (*(volatile sc_u32 *)a.err) { ok = 0; break; }\n"
      "      if (clock64() - t0 > a.budget) {\n"
      "        if (atomicCAS(a.err, 0u, 1u) == 0u) { a.err[1] = rank; a.err[2] = step; a.err[3] = peer; }\n"
      "        ok = 0;\n"
      "        break;\n"
      "      }\n"
      "      __nanosleep(ns); /* back off (32..256 ns): blocks polling hot words slow everyone's traffic */\n"
      "    }\n"
      "    __threadfence_system();\n"
      "  }\n"
      "  __syncthreads();\n"
      "  return ok;\n"
      "}\n\n"
      "/* Block blk's part of chunk c, in tiles: the chunk [lo, hi) is cut at 16-byte boundaries (absolute\n"
      " * element indices, the same on every rank) from A = lo rounded down to a vector, into tiles of\n"
      " * L = a.tile elements (the host's choice, a multiple of a vector: codegen/cuda_abi.h), and tile\n"
      " * i goes to block i %% nblk, so block b of a reader reads what block b of the writer wrote. Blocks\n"
      " * streaming neighbouring tiles keep DRAM pages open: one contiguous range per block reached 86%%\n"
      " * of the copy bandwidth on an H100, 32 KiB tiles dealt in turn 97%%; with few blocks, tiles of\n"
      " * several passes spread the cost of starting one (docs/performance.md). */\n"
      "struct sc_tile { sc_u64 lo, hi, A, L, i, j, x0, x1; }; /* [x0, x1): tile i, the j-th of this block */\n"
      "__device__ __forceinline__ void sc_tile_clip(sc_tile &t) {\n"
      "  sc_u64 s = t.A + t.i * t.L, e = s + t.L;\n"
      "  t.x0 = s < t.lo ? t.lo : s > t.hi ? t.hi : s;\n"
      "  t.x1 = e > t.hi ? t.hi : e < t.x0 ? t.x0 : e;\n"
      "}\n"
      "/* Out of line: its 64-bit divisions, inlined in every group, tripled NVRTC's time and the cubin. */\n"
      "__device__ __noinline__ sc_tile sc_tile0(const sc_args &a, int c, int blk) {\n"
      "  sc_tile t;\n"
      "  t.lo = SC_LO(a.count, c);\n  t.hi = SC_LO(a.count, c + 1);\n  t.A = t.lo / SC_VW * SC_VW;\n"
      "  t.L = a.tile;\n"
      "  t.i = blk;\n  t.j = 0;\n"
      "  sc_tile_clip(t);\n"
      "  return t;\n"
      "}\n"
      "__device__ __forceinline__ void sc_tile_next(sc_tile &t, int nblk) { t.i += nblk; t.j++; sc_tile_clip(t); }\n"
      "/* Where tile t lies in a slot holding the chunk (a mirror) or the block's part (a temp): at the\n"
      " * same offset modulo 16 bytes as in the buffer, so every operand vectorises alike. */\n"
      "__device__ __forceinline__ sc_u64 sc_coff(const sc_tile &t) { return t.x0 - t.lo + t.lo %% SC_VW; }\n"
      "__device__ __forceinline__ sc_u64 sc_poff(const sc_tile &t) { return t.j * t.L + (t.x0 - (t.A + t.i * t.L)); }\n\n"
      "/* d[i] = a[i] (op) s[0][i] (op) ... (op) s[K-1][i] for i < n, left to right; K == 0 is a copy.\n"
      " * All pointers share one offset modulo 16 bytes (checked): a scalar head up to the boundary,\n"
      " * 16-byte vectors, a scalar tail. The vectors go in passes of U per thread and operand, every\n"
      " * load of a pass issued before the first use (K is a template argument, so the passes unroll;\n"
      " * U * (K + 1) <= SC_INFLIGHT loads keep the registers within __launch_bounds__'s budget), then\n"
      " * the ops in the proven order; what is left of the vectors goes one at a time. */\n"
      "template <int K>\n"
      "__device__ __noinline__ void sc_chain(sc_acc *d, const sc_acc *a, const sc_acc *const *s, sc_u64 n) {\n"
      "  constexpr int U = SC_INFLIGHT / (K + 1) > 0 ? SC_INFLIGHT / (K + 1) : 1, KS = K > 0 ? K : 1;\n"
      "  const sc_acc *src[KS];\n"
      "  sc_u64 mis = ((sc_u64)d ^ (sc_u64)a) & 15;\n"
      "#pragma unroll\n"
      "  for (int j = 0; j < K; j++) { src[j] = s[j]; mis |= ((sc_u64)d ^ (sc_u64)src[j]) & 15; }\n"
      "  sc_u64 head = mis ? n : ((16 - ((sc_u64)d & 15)) & 15) / sizeof(sc_acc);\n"
      "  if (head > n) head = n;\n"
      "  sc_u64 nv = (n - head) / SC_VW, per = U * (sc_u64)blockDim.x, full = nv / per * per;\n"
      "  for (sc_u64 i = threadIdx.x; i < head; i += blockDim.x) {\n"
      "    sc_acc x = a[i];\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < K; j++) x = sc_op(x, src[j][i]);\n"
      "    d[i] = x;\n"
      "  }\n"
      "  const sc_vec *va = (const sc_vec *)(a + head);\n"
      "  const sc_vec *vs[KS];\n"
      "#pragma unroll\n"
      "  for (int j = 0; j < K; j++) vs[j] = (const sc_vec *)(src[j] + head);\n"
      "  sc_vec *vd = (sc_vec *)(d + head);\n"
      "  for (sc_u64 i0 = threadIdx.x; i0 < full; i0 += per) {\n"
      "    sc_vec x[U], y[KS][U];\n"
      "#pragma unroll\n"
      "    for (int u = 0; u < U; u++) x[u] = va[i0 + u * (sc_u64)blockDim.x];\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < K; j++)\n"
      "#pragma unroll\n"
      "      for (int u = 0; u < U; u++) y[j][u] = vs[j][i0 + u * (sc_u64)blockDim.x];\n"
      "#pragma unroll\n"
      "    for (int u = 0; u < U; u++) {\n"
      "#pragma unroll\n"
      "      for (int j = 0; j < K; j++)\n"
      "#pragma unroll\n"
      "        for (int e = 0; e < (int)SC_VW; e++) x[u].v[e] = sc_op(x[u].v[e], y[j][u].v[e]);\n"
      "      vd[i0 + u * (sc_u64)blockDim.x] = x[u];\n"
      "    }\n"
      "  }\n"
      "  for (sc_u64 i = full + threadIdx.x; i < nv; i += blockDim.x) {\n"
      "    sc_vec x = va[i];\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < K; j++) {\n"
      "      sc_vec y = vs[j][i];\n"
      "#pragma unroll\n"
      "      for (int e = 0; e < (int)SC_VW; e++) x.v[e] = sc_op(x.v[e], y.v[e]);\n"
      "    }\n"
      "    vd[i] = x;\n"
      "  }\n"
      "  for (sc_u64 i = head + nv * SC_VW + threadIdx.x; i < n; i += blockDim.x) {\n"
      "    sc_acc x = a[i];\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < K; j++) x = sc_op(x, src[j][i]);\n"
      "    d[i] = x;\n"
      "  }\n"
      "}\n\n"
      "/* After a group: make the data visible, count the reads of the sources, publish. */\n"
      "__device__ __noinline__ void sc_signal(const sc_args &a, const int *src, int k, sc_u64 cell, sc_u64 *ver,\n"
      "                                       sc_u64 version) {\n"
      "  __syncthreads();\n"
      "  if (threadIdx.x == 0) {\n"
      "    __threadfence_system();\n"
      "    for (int j = 0; j < k; j++) atomicAdd(a.reads[src[j]] + cell, 1ull);\n"
      "    if (ver) atomicExch(ver + cell, version);\n"
      "  }\n"
      "}\n\n"
      "");
  if (check) emit_checksums(b);
  put(b,
      "/* Entry: this block's cells of `rank` start the call: reads first, then (fenced) the version\n"
      " * that lets readers in. The previous call drained every read of these cells before it ended. */\n"
      "__device__ __noinline__ void sc_enter(const sc_args &a, int rank, int blk, int nblk) {\n");
  if (check) /* the inputs' sums, before the versions that let readers in */
    put(b, "  for (sc_u64 c = 0; c < SC_NCHUNKS; c++) sc_seal(a, rank, c * nblk + blk, a.buf[rank], (int)c, blk, nblk);\n");
  put(b,
      "  if (threadIdx.x == 0) {\n"
      "    for (sc_u64 c = 0; c < SC_NCHUNKS; c++) atomicExch(a.reads[rank] + c * nblk + blk, a.epoch);\n"
      "    __threadfence_system();\n"
      "    for (sc_u64 c = 0; c < SC_NCHUNKS; c++) atomicExch(a.ver[rank] + c * nblk + blk, a.epoch);\n"
      "  }\n"
      "  __syncthreads();\n"
      "}\n\n"
      "/* Drain: the kernel ends only after every read the plan makes of this rank's cells is done, so\n"
      " * the caller's buffer may be reused as soon as the stream moves on. */\n"
      "__device__ __noinline__ bool sc_drain(const sc_args &a, int rank, int blk, int nblk, const sc_u32 *fin,\n"
      "                                      int step) {\n"
      "  for (sc_u64 c = 0; c < SC_NCHUNKS; c++)\n"
      "    if (fin[c] && !sc_wait(a.reads[rank] + c * nblk + blk, a.epoch + fin[c], a, rank, step, -1)) return false;\n"
      "  return true;\n"
      "}\n\n");
}

static void emit_conversions(sb *b, int dtype) {
  if (dtype != SCHEDC_F16 && dtype != SCHEDC_BF16) return;
  int bf = dtype == SCHEDC_BF16;
  put(b, "/* %s <-> f32: widen exactly once on the way in, round to nearest even once on the way out. */\n",
      bf ? "bf16" : "f16");
  put(b, "__device__ __forceinline__ float sc_widen(unsigned short h) {\n");
  if (bf) {
    put(b, "  return __int_as_float((int)((sc_u32)h << 16));\n}\n");
  } else {
    put(b, "  sc_u32 s = (sc_u32)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 1023u, u;\n"
           "  if (e == 31u) u = s | 0x7f800000u | (m << 13);\n"
           "  else if (e) u = s | ((e + 112u) << 23) | (m << 13);\n"
           "  else if (!m) u = s;\n"
           "  else { int k = -1; do { m <<= 1; k++; } while (!(m & 1024u)); u = s | ((sc_u32)(112 - k) << 23) | ((m & 1023u) << 13); }\n"
           "  return __int_as_float((int)u);\n}\n");
  }
  put(b, "__device__ __forceinline__ unsigned short sc_narrow(float f) {\n  sc_u32 u = (sc_u32)__float_as_int(f);\n");
  if (bf) {
    put(b, "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
           "  u += 0x7fffu + ((u >> 16) & 1u);\n  return (unsigned short)(u >> 16);\n}\n");
  } else {
    put(b, "  sc_u32 s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
           "  if (a > 0x7f800000u) return (unsigned short)(s | 0x7e00u);\n"
           "  if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);\n"
           "  if (a >= 0x38800000u) { sc_u32 r = a - 0x38000000u, h = r >> 13, m = r & 0x1fffu;\n"
           "    if (m > 0x1000u || (m == 0x1000u && (h & 1u))) h++;\n    return (unsigned short)(s | h); }\n"
           "  if (a < 0x33000000u) return (unsigned short)s;\n"
           "  sc_u32 e = a >> 23, mm = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;\n"
           "  sc_u32 h = mm >> sh, rem = mm & ((1u << sh) - 1u), half = 1u << (sh - 1u);\n"
           "  if (rem > half || (rem == half && (h & 1u))) h++;\n  return (unsigned short)(s | h);\n}\n");
  }
  put(b, "extern \"C\" __global__ void %s(const unsigned short *in, float *out, sc_u64 n) {\n"
         "  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x)\n"
         "    out[i] = sc_widen(in[i]);\n}\n"
         "extern \"C\" __global__ void %s(const float *in, unsigned short *out, sc_u64 n) {\n"
         "  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x)\n"
         "    out[i] = sc_narrow(in[i]);\n}\n\n",
      SC_CUDA_ENTRY_WIDEN, SC_CUDA_ENTRY_NARROW);
}

static void emit_finish(sb *b, int dtype, int op) {
  if (op != SCHEDC_AVG) return;
  int isint = dtype == SCHEDC_I32 || dtype == SCHEDC_I64;
  put(b, "/* avg: the sum divided by nranks once, in the accumulation type%s. */\n"
         "extern \"C\" __global__ void %s(sc_acc *x, sc_u64 n, int nranks) {\n"
         "  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x) {\n"
         "    sc_acc q = x[i] / (sc_acc)nranks;\n",
      isint ? "" : "; a NaN stays the default NaN (the GPU's division\n * would give 0x7fffffff where the CPU keeps the quiet NaN's bits)",
      SC_CUDA_ENTRY_AVG);
  if (isint) put(b, "    x[i] = q;\n  }\n}\n\n");
  else put(b, "    x[i] = q != q ? %s : q;\n  }\n}\n\n", default_nan(dtype));
}

static const char *phase_name(int ph) { return ph == SC_PH_A ? "A: into a temp" : ph == SC_PH_B ? "B" : "C: write back"; }

/* Rank r's program as a device function over (block blk of nblk); every thread of the block
 * runs it, thread 0 does the waiting and signalling. Returns early (all threads alike) when a
 * wait fails. */
/* Source s of a group of rank r: the peer's buffer, or (split, from another node) the mirror
 * slot holding the chunk, at the tile's own offset modulo 16 bytes so that it vectorises alike.
 * tile: the pointer for tile `t`; else the (base, kind) pair sc_check takes. */
static void put_src(sb *b, const sc_split *sp, const sc_prog *prog, const sc_group *g, uint32_t s, uint32_t r, int tile) {
  const sc_src *x = &prog->srcs[g->src_off + s];
  int32_t slot = sp ? sp->slot[g->src_off + s] : -1;
  if (slot < 0) put(b, tile ? "a.buf[%u] + t.x0" : "a.buf[%u], 0", x->rank);
  else put(b, tile ? "a.mir[%u] + %dull * a.mstride + sc_coff(t)" : "a.mir[%u] + %dull * a.mstride, 1", r, slot);
}

/* The loop over this block's tiles of chunk c (sc_tile0), opening the statement that follows. */
static void put_tiles(sb *b, uint32_t c) {
  put(b, "    for (sc_tile t = sc_tile0(a, %u, blk); t.x0 < t.x1; sc_tile_next(t, nblk))", c);
}

static int is_remote(const sc_split *sp, const sc_group *g, uint32_t s) { return sp && sp->slot[g->src_off + s] >= 0; }

static void emit_rank(sb *b, const sc_ir *ir, const sc_prog *prog, uint32_t r, int kernel, int check,
                      const sc_split *sp) {
  const sc_rankprog *rp = &prog->rank[r];
  put(b, "/* rank %u: %u write groups, %u temp slot(s) */\n", r, rp->ng, rp->ntemp);
  put(b, "__device__ const sc_u32 sc_fin%u[SC_NCHUNKS] = {", r);
  for (uint32_t c = 0; c < ir->nchunks; c++)
    put(b, "%s%u", c ? ", " : "", sp ? sp->final_reads[(size_t)r * ir->nchunks + c] : rp->final_reads[c]);
  put(b, "}; /* reads of each cell over the call%s */\n", sp ? " (by this node's ranks)" : "");
  put(b, "__device__ __noinline__ void sc_rank%u(const sc_args &a, int blk, int nblk) {\n"
         "  sc_acc *me = a.buf[%u];\n  sc_u64 cell;\n  (void)cell; (void)me;\n", r, r);
  put(b, "  %ssc_enter(a, %u, blk, nblk);\n", sp ? "if (a.phase == 0) " : "", r);
  uint32_t last_step = UINT32_MAX;
  for (uint32_t gi = 0; gi < rp->ng; gi++) {
    const sc_group *g = &prog->groups[rp->g_off + gi];
    const sc_src *src = &prog->srcs[g->src_off];
    if (g->step != last_step) {
      last_step = g->step;
      const char *file = "?";
      for (uint32_t i = ir->step_off[g->step]; i < ir->step_off[g->step + 1]; i++)
        if (ir->xfers[i].dst == r && ir->xfers[i].line == g->line) { file = ir->files[ir->xfers[i].file]; break; }
      put(b, "  /* %s:%u */\n  /* step %u */\n", file, g->line, g->step);
    }
    uint32_t at = rp->g_off + gi; /* the group's index in prog->groups */
    uint32_t wait_reads = sp ? sp->wait_reads[at] : g->wait_reads;
    if (sp) put(b, "  if (a.phase == %d) ", sp->phase[at]);
    else put(b, "  ");
    put(b, "{ /* chunk %u, phase %s, %s", g->chunk, phase_name(g->phase),
        g->phase == SC_PH_C ? "" : g->copy ? "copy from" : "reduce");
    for (uint32_t s = 0; g->phase != SC_PH_C && s < g->nsrc; s++)
      put(b, " r%u%s", src[s].rank, is_remote(sp, g, s) ? " (other node: mirror)" : "");
    put(b, " */\n    cell = %uull * nblk + blk;\n", g->chunk);
    if (g->phase != SC_PH_C)
      for (uint32_t s = 0; s < g->nsrc; s++)
        if (!is_remote(sp, g, s)) /* a mirror was filled before this launch: nothing to wait for */
          put(b, "    if (!sc_wait(a.ver[%u] + cell, a.epoch + %u, a, %u, %u, %u)) return;\n", src[s].rank,
              src[s].version, r, g->step, src[s].rank);
    if (g->phase != SC_PH_A && wait_reads)
      put(b, "    if (!sc_wait(a.reads[%u] + cell, a.epoch + %u, a, %u, %u, -1)) return;\n", r, wait_reads, r,
          g->step);
    /* temp slot of block blk: its own region (blocks run independently), holding the part's
     * tiles one after another (sc_poff) */
    const char *dst = g->phase == SC_PH_A ? "tb + sc_poff(t)" : "me + t.x0";
    if (g->phase != SC_PH_B)
      put(b, "    sc_acc *tb = a.temp[%u] + (%uull * nblk + blk) * a.tstride;\n", r, g->temp);
    if (g->phase == SC_PH_C) {
      put_tiles(b, g->chunk);
      put(b, " sc_chain<0>(me + t.x0, tb + sc_poff(t), 0, t.x1 - t.x0);\n");
      if (check) put(b, "    sc_seal(a, %u, cell, me, %u, blk, nblk);\n", r, g->chunk);
      put(b, "    sc_signal(a, 0, 0, cell, a.ver[%u], a.epoch + %u);\n  }\n", r, g->version);
      continue;
    }
    for (uint32_t s = 0; check && s < g->nsrc; s++) { /* across nodes: the sums came with the payload */
      if (is_remote(sp, g, s))
        put(b, "    if (!sc_check(a, %u, a.msum[%u] + %dull * nblk + blk, ", src[s].rank, r, sp->slot[g->src_off + s]);
      else
        put(b, "    if (!sc_check(a, %u, a.sum[%u] + cell, ", src[s].rank, src[s].rank);
      put_src(b, sp, prog, g, s, r, 0);
      put(b, ", %u, blk, nblk, %u, %u)) return;\n", g->chunk, r, g->step);
    }
    /* the ranks whose read counts this group bumps: same-node sources only */
    uint32_t nlocal = 0;
    put(b, "    const int src[%u] = {", g->nsrc);
    for (uint32_t s = 0; s < g->nsrc; s++)
      if (!is_remote(sp, g, s)) put(b, "%s%u", nlocal++ ? ", " : "", src[s].rank);
    put(b, "%s};\n", nlocal ? "" : "-1");
    put_tiles(b, g->chunk);
    if (g->copy) {
      put(b, " sc_chain<0>(%s, ", dst);
      put_src(b, sp, prog, g, 0, r, 1);
      put(b, ", 0, t.x1 - t.x0);\n");
    } else {
      put(b, " {\n      const sc_acc *s[%u] = {", g->nsrc);
      for (uint32_t s = 0; s < g->nsrc; s++) {
        if (s) put(b, ", ");
        put_src(b, sp, prog, g, s, r, 1);
      }
      put(b, "};\n      sc_chain<%u>(%s, me + t.x0, s, t.x1 - t.x0);\n    }\n", g->nsrc, dst);
    }
    if (g->phase == SC_PH_A) /* reads done; the cell is published by its phase C write-back */
      put(b, "    sc_signal(a, src, %u, cell, 0, 0);\n  }\n", nlocal);
    else {
      if (check) put(b, "    sc_seal(a, %u, cell, me, %u, blk, nblk);\n", r, g->chunk);
      put(b, "    sc_signal(a, src, %u, cell, a.ver[%u], a.epoch + %u);\n  }\n", nlocal, r, g->version);
    }
  }
  if (sp) put(b, "  if (a.phase == %u) ", sp->nphases - 1);
  else put(b, "  ");
  put(b, "sc_drain(a, %u, blk, nblk, sc_fin%u, %u);\n}\n", r, r, ir->nsteps);
  if (kernel)
    put(b, "extern \"C\" __global__ void __launch_bounds__(512, 2) %s%u(sc_args a) { sc_rank%u(a, blockIdx.x, gridDim.x); }\n",
        SC_CUDA_ENTRY_RANK, r, r);
  put(b, "\n");
}

/* The one kernel of the all-ranks unit: ranks [first, first + count) in one launch, gridDim.x =
 * count * blocks per rank, block i runs rank first + i / nblk's part i % nblk. Virtual ranks on
 * one GPU launch every rank at once (all blocks must be resident: a cooperative launch
 * guarantees it or fails); a GPU per rank launches its own rank (count 1). One kernel rather
 * than one per rank plus this one: ptxas would compile every rank's code twice.
 * __launch_bounds__(512, 2): two blocks of 512 threads fit on a multiprocessor (at most 64
 * registers), which the runtime's residency check assumes (blocks x virtual ranks <= 2 x SMs);
 * without the 2 ptxas took more registers and 264 blocks no longer launched on an H100. */
static void emit_all(sb *b, const sc_ir *ir) {
  put(b, "extern \"C\" __global__ void __launch_bounds__(512, 2) %s(sc_args a, int first, int count) {\n"
         "  int nblk = gridDim.x / count, r = first + blockIdx.x / nblk, blk = blockIdx.x %% nblk;\n  switch (r) {\n",
      SC_CUDA_ENTRY_ALL);
  for (uint32_t r = 0; r < ir->nranks; r++) put(b, "  case %u: sc_rank%u(a, blk, nblk); break;\n", r, r);
  put(b, "  }\n}\n");
}

char *sc_cuda_emit(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op) {
  return sc_cuda_emit_checked(ir, prog, rank, dtype, op, 0);
}

char *sc_cuda_emit_checked(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op, int check) {
  return sc_cuda_emit_split(ir, prog, rank, dtype, op, check, NULL);
}

char *sc_cuda_emit_split(const sc_ir *ir, const sc_prog *prog, int rank, int dtype, int op, int check,
                         const sc_split *sp) {
  if (dtype < 0 || dtype >= SCHEDC_DTYPE_COUNT_ || op < 0 || (op >= SCHEDC_OP_COUNT_ && !sc_opreg_get(op))) return NULL;
  if (rank >= (int)ir->nranks) return NULL;
  sb b = {0};
  put(&b, "/* schedc generated code: plan '%s' (%s, %u ranks, %u chunks, %u steps), %s %s, %s.\n"
          " * Straight-line write groups over the primitives below; no headers, everything comes in as\n"
          " * kernel parameters. Compile with --fmad=false: reductions must be add.rn/mul.rn, never fma. */\n",
      ir->name, sc_ir_collective_name(ir->collective), ir->nranks, ir->nchunks, ir->nsteps, sc_dtype_name(dtype),
      sc_op_name(op), rank < 0 ? "all ranks" : "one rank");
  int copy_only = ir->collective == SCHEDC_ALLGATHER || ir->collective == SCHEDC_BROADCAST;
  emit_prelude(&b, ir, dtype, op, copy_only, check, sp != NULL);
  if (!copy_only) emit_conversions(&b, dtype);
  if (!copy_only) emit_finish(&b, dtype, op);
  for (uint32_t r = 0; r < ir->nranks; r++)
    if (rank < 0 || (uint32_t)rank == r) emit_rank(&b, ir, prog, r, rank >= 0, check, sp);
  if (rank < 0) emit_all(&b, ir);
  if (b.oom) { free(b.p); return NULL; }
  return b.p;
}
