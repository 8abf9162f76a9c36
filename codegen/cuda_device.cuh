/*
 * cuda_device.cuh — the fixed device code of every generated CUDA source (codegen/cuda_emit.c
 * writes the plan's own parts around it: the types, sc_args's fields, sc_op, each rank's write
 * groups, the kernels). Embedded into the library at build time (cmake/embed.cmake: a C array),
 * so the emitter reads no file at run time. Not compiled on its own: sc_acc, sc_u32, sc_u64,
 * SC_NRANKS, SC_NCHUNKS, sc_args and sc_op come from the generated text before it.
 *
 * Format: a line "//@@ NAME: note" starts section NAME, which runs to the next such line; the
 * emitter copies a section's text exactly (its trailing blank lines too) and replaces
 * @EPOCH_BITS@ (SC_CUDA_EPOCH_BITS), @ENTRY_WIDEN@, @ENTRY_NARROW@, @ENTRY_AVG@, @ENTRY_XSTATS@,
 * @ENTRY_XIN@, @ENTRY_XOUT@, @ENTRY_QSTATS@, @ENTRY_QIN@, @ENTRY_QOUT@ (the entry points' names, cuda_abi.h) and @NAN@ (the default NaN of the accumulation type) in it. This header
 * comment, before the first section, is never emitted. golden.cuda_emit holds the emitted text
 * byte for byte, so a change here shows there.
 */
//@@ defs: after the generated typedefs and SC_NRANKS / SC_NCHUNKS
#define SC_VW (16 / sizeof(sc_acc))
#define SC_LO(K, c) ((K) * (sc_u64)(c) / SC_NCHUNKS) /* chunk c is [SC_LO(c), SC_LO(c+1)) */
#define SC_INFLIGHT 8 /* 16-byte loads per thread in one pass of sc_chain */
struct alignas(16) sc_vec { sc_acc v[SC_VW]; };

//@@ args_doc: before the generated fields of sc_args (cuda_abi.h's list)
/* One call, the same for every rank (one fused launch or one launch per rank): the runtime's
 * parameter block, word for word (codegen/cuda_abi.h). Counters are per (cell, block):
 * ver[r][c * nblk + b], reads[r][c * nblk + b]; a call's values start at `epoch` (call number
 * << @EPOCH_BITS@), so nothing is reset between calls and a stale value from an earlier call never
 * satisfies a wait. temp[r] holds tstride elements per (temp slot, block): at least the tiles
 * of the longest part of a chunk plus a vector (sc_poff). */
struct sc_args {
//@@ core: after the generated sc_op: waits, tiles, the reduce chain, publishing
/* Thread 0 waits until *ctr >= want (then fences: acquire), within `budget` cycles; on timeout or
 * a failure raised elsewhere it records (rank, step, peer) once and every thread of the block
 * returns false. */
__device__ __noinline__ bool sc_wait(const sc_u64 *ctr, sc_u64 want, const sc_args &a, int rank, int step,
                                     int peer) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    ok = 1;
    long long t0 = clock64();
    for (unsigned ns = 32; *(volatile const sc_u64 *)ctr < want; ns = ns < 256 ? 2 * ns : ns) {
      if (*(volatile sc_u32 *)a.err) { ok = 0; break; }
      if (clock64() - t0 > a.budget) {
        if (atomicCAS(a.err, 0u, 1u) == 0u) { a.err[1] = rank; a.err[2] = step; a.err[3] = peer; }
        ok = 0;
        break;
      }
      __nanosleep(ns); /* back off (32..256 ns): blocks polling hot words slow everyone's traffic */
    }
    __threadfence_system();
  }
  __syncthreads();
  return ok;
}

/* Block blk's part of chunk c, in tiles: the chunk [lo, hi) is cut at 16-byte boundaries (absolute
 * element indices, the same on every rank) from A = lo rounded down to a vector, into tiles of
 * L = a.tile elements (the host's choice, a multiple of a vector: codegen/cuda_abi.h), and tile
 * i goes to block i % nblk, so block b of a reader reads what block b of the writer wrote. Blocks
 * streaming neighbouring tiles keep DRAM pages open: one contiguous range per block reached 86%
 * of the copy bandwidth on an H100, 32 KiB tiles dealt in turn 97%; with few blocks, tiles of
 * several passes spread the cost of starting one (docs/performance.md). */
struct sc_tile { sc_u64 lo, hi, A, L, i, j, x0, x1; }; /* [x0, x1): tile i, the j-th of this block */
__device__ __forceinline__ void sc_tile_clip(sc_tile &t) {
  sc_u64 s = t.A + t.i * t.L, e = s + t.L;
  t.x0 = s < t.lo ? t.lo : s > t.hi ? t.hi : s;
  t.x1 = e > t.hi ? t.hi : e < t.x0 ? t.x0 : e;
}
/* Out of line: its 64-bit divisions, inlined in every group, tripled NVRTC's time and the cubin. */
__device__ __noinline__ sc_tile sc_tile0(const sc_args &a, int c, int blk) {
  sc_tile t;
  t.lo = SC_LO(a.count, c);
  t.hi = SC_LO(a.count, c + 1);
  t.A = t.lo / SC_VW * SC_VW;
  t.L = a.tile;
  t.i = blk;
  t.j = 0;
  sc_tile_clip(t);
  return t;
}
__device__ __forceinline__ void sc_tile_next(sc_tile &t, int nblk) { t.i += nblk; t.j++; sc_tile_clip(t); }
/* Where tile t lies in a slot holding the chunk (a mirror) or the block's part (a temp): at the
 * same offset modulo 16 bytes as in the buffer, so every operand vectorises alike. */
__device__ __forceinline__ sc_u64 sc_coff(const sc_tile &t) { return t.x0 - t.lo + t.lo % SC_VW; }
__device__ __forceinline__ sc_u64 sc_poff(const sc_tile &t) { return t.j * t.L + (t.x0 - (t.A + t.i * t.L)); }

/* d[i] = a[i] (op) s[0][i] (op) ... (op) s[K-1][i] for i < n, left to right; K == 0 is a copy.
 * All pointers share one offset modulo 16 bytes (checked): a scalar head up to the boundary,
 * 16-byte vectors, a scalar tail. The vectors go in passes of U per thread and operand, every
 * load of a pass issued before the first use (K is a template argument, so the passes unroll;
 * U * (K + 1) <= SC_INFLIGHT loads keep the registers within __launch_bounds__'s budget), then
 * the ops in the proven order; what is left of the vectors goes one at a time. */
template <int K>
__device__ __noinline__ void sc_chain(sc_acc *d, const sc_acc *a, const sc_acc *const *s, sc_u64 n) {
  constexpr int U = SC_INFLIGHT / (K + 1) > 0 ? SC_INFLIGHT / (K + 1) : 1, KS = K > 0 ? K : 1;
  const sc_acc *src[KS];
  sc_u64 mis = ((sc_u64)d ^ (sc_u64)a) & 15;
#pragma unroll
  for (int j = 0; j < K; j++) { src[j] = s[j]; mis |= ((sc_u64)d ^ (sc_u64)src[j]) & 15; }
  sc_u64 head = mis ? n : ((16 - ((sc_u64)d & 15)) & 15) / sizeof(sc_acc);
  if (head > n) head = n;
  sc_u64 nv = (n - head) / SC_VW, per = U * (sc_u64)blockDim.x, full = nv / per * per;
  for (sc_u64 i = threadIdx.x; i < head; i += blockDim.x) {
    sc_acc x = a[i];
#pragma unroll
    for (int j = 0; j < K; j++) x = sc_op(x, src[j][i]);
    d[i] = x;
  }
  const sc_vec *va = (const sc_vec *)(a + head);
  const sc_vec *vs[KS];
#pragma unroll
  for (int j = 0; j < K; j++) vs[j] = (const sc_vec *)(src[j] + head);
  sc_vec *vd = (sc_vec *)(d + head);
  for (sc_u64 i0 = threadIdx.x; i0 < full; i0 += per) {
    sc_vec x[U], y[KS][U];
#pragma unroll
    for (int u = 0; u < U; u++) x[u] = va[i0 + u * (sc_u64)blockDim.x];
#pragma unroll
    for (int j = 0; j < K; j++)
#pragma unroll
      for (int u = 0; u < U; u++) y[j][u] = vs[j][i0 + u * (sc_u64)blockDim.x];
#pragma unroll
    for (int u = 0; u < U; u++) {
#pragma unroll
      for (int j = 0; j < K; j++)
#pragma unroll
        for (int e = 0; e < (int)SC_VW; e++) x[u].v[e] = sc_op(x[u].v[e], y[j][u].v[e]);
      vd[i0 + u * (sc_u64)blockDim.x] = x[u];
    }
  }
  for (sc_u64 i = full + threadIdx.x; i < nv; i += blockDim.x) {
    sc_vec x = va[i];
#pragma unroll
    for (int j = 0; j < K; j++) {
      sc_vec y = vs[j][i];
#pragma unroll
      for (int e = 0; e < (int)SC_VW; e++) x.v[e] = sc_op(x.v[e], y.v[e]);
    }
    vd[i] = x;
  }
  for (sc_u64 i = head + nv * SC_VW + threadIdx.x; i < n; i += blockDim.x) {
    sc_acc x = a[i];
#pragma unroll
    for (int j = 0; j < K; j++) x = sc_op(x, src[j][i]);
    d[i] = x;
  }
}

/* After a group: make the data visible, count the reads of the sources, publish. */
__device__ __noinline__ void sc_signal(const sc_args &a, const int *src, int k, sc_u64 cell, sc_u64 *ver,
                                       sc_u64 version) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    for (int j = 0; j < k; j++) atomicAdd(a.reads[src[j]] + cell, 1ull);
    if (ver) atomicExch(ver + cell, version);
  }
}

//@@ checksums: checksum mode only (SCHEDC_VERIFY=checksum)
/* Checksums (SCHEDC_VERIFY=checksum). sc_sum_part: the block's sum over its part (sc_tile0) of
 * chunk c of the operand at base (kind 0: indexed like the working buffer; 1: a slot holding the
 * chunk, a mirror); the part's element `at` (counted across its tiles) is read with the bits
 * `mask` flipped (injection; at = ~0: none). One block-wide reduction per part, not per tile. */
__device__ __noinline__ sc_u64 sc_sum_part(const sc_args &a, const sc_acc *base, int kind, int c, int blk, int nblk,
                                         sc_u64 at, sc_u64 mask) {
  __shared__ sc_u64 tot;
  __syncthreads(); /* the part's writes by this block, and the last use of tot, are done */
  if (threadIdx.x == 0) tot = 0;
  __syncthreads();
  sc_u64 s = 0, pos = 0;
  for (sc_tile t = sc_tile0(a, c, blk); t.x0 < t.x1; sc_tile_next(t, nblk)) {
    const sc_acc *p = base + (kind ? sc_coff(t) : t.x0);
    sc_u64 n = t.x1 - t.x0;
    for (sc_u64 i = threadIdx.x; i < n; i += blockDim.x) {
      union { sc_acc v; sc_u64 u; } w;
      w.u = 0;
      w.v = p[i];
      if (pos + i == at) w.u ^= mask;
      s += (w.u ^ ((t.x0 + i) * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;
    }
    pos += n;
  }
  atomicAdd(&tot, s);
  __syncthreads();
  return tot;
}

/* Writer: the sum of its part of a cell, stored before the version is published (fenced there). */
__device__ __noinline__ void sc_seal(const sc_args &a, int rank, sc_u64 cell, const sc_acc *buf, int c, int blk,
                                     int nblk) {
  sc_u64 s = sc_sum_part(a, buf, 0, c, blk, nblk, ~0ull, 0);
  if (threadIdx.x == 0) a.sum[rank][cell] = s;
}

/* Reader: the sum of what it loads from src's part must be the one src published (*sum), before any
 * use. A mismatch is read once more with repair (a transient fault: recorded as repaired in
 * err[8..15] once per call), else recorded in err[0..7] (code 2) and every block stops. */
__device__ __noinline__ bool sc_check(const sc_args &a, int src, const sc_u64 *sum, const sc_acc *base, int kind,
                                      int chunk, int blk, int nblk, int rank, int step) {
  sc_u64 want = *(volatile const sc_u64 *)sum, at = ~0ull, mask = 0, n = 0;
  if (a.flip_src == src && a.flip_dst == rank && a.flip_step == step && a.flip_chunk == chunk && blk == 0) {
    for (sc_tile t = sc_tile0(a, chunk, blk); t.x0 < t.x1; sc_tile_next(t, nblk)) n += t.x1 - t.x0;
    sc_u64 nb = n * 8 * sizeof(sc_acc), bits = !n ? 0 : a.flip_bit < 0 ? nb / 2 + 3 : (sc_u64)a.flip_bit % nb;
    at = n ? bits / (8 * sizeof(sc_acc)) : ~0ull;
    mask = n ? 1ull << (bits % (8 * sizeof(sc_acc))) : 0;
  }
  sc_u64 got = sc_sum_part(a, base, kind, chunk, blk, nblk, at, mask);
  if (got == want) return true;
  sc_u32 call = (sc_u32)(a.epoch >> @EPOCH_BITS@);
  if (a.repair && sc_sum_part(a, base, kind, chunk, blk, nblk, ~0ull, 0) == want) {
    if (threadIdx.x == 0) {
      sc_u32 prev = *(volatile sc_u32 *)(a.err + 8);
      if (prev != call && atomicCAS(a.err + 8, prev, call) == prev) {
        a.err[9] = rank; a.err[10] = step; a.err[11] = src; a.err[12] = chunk;
        a.err[13] = (sc_u32)got; a.err[14] = (sc_u32)want;
      }
    }
    return true;
  }
  if (threadIdx.x == 0 && atomicCAS(a.err, 0u, 2u) == 0u) {
    a.err[1] = rank; a.err[2] = step; a.err[3] = src; a.err[4] = chunk;
    a.err[5] = (sc_u32)got; a.err[6] = (sc_u32)want;
  }
  return false;
}

//@@ enter_head: the entry of a call
/* Entry: this block's cells of `rank` start the call: reads first, then (fenced) the version
 * that lets readers in. The previous call drained every read of these cells before it ended. */
__device__ __noinline__ void sc_enter(const sc_args &a, int rank, int blk, int nblk) {
//@@ enter_seal: checksum mode only: the inputs' sums, before the versions that let readers in
  for (sc_u64 c = 0; c < SC_NCHUNKS; c++) sc_seal(a, rank, c * nblk + blk, a.buf[rank], (int)c, blk, nblk);
//@@ enter_tail: the rest of the entry, and the drain
  if (threadIdx.x == 0) {
    for (sc_u64 c = 0; c < SC_NCHUNKS; c++) atomicExch(a.reads[rank] + c * nblk + blk, a.epoch);
    __threadfence_system();
    for (sc_u64 c = 0; c < SC_NCHUNKS; c++) atomicExch(a.ver[rank] + c * nblk + blk, a.epoch);
  }
  __syncthreads();
}

/* Drain: the kernel ends only after every read the plan makes of this rank's cells is done, so
 * the caller's buffer may be reused as soon as the stream moves on. */
__device__ __noinline__ bool sc_drain(const sc_args &a, int rank, int blk, int nblk, const sc_u32 *fin,
                                      int step) {
  for (sc_u64 c = 0; c < SC_NCHUNKS; c++)
    if (fin[c] && !sc_wait(a.reads[rank] + c * nblk + blk, a.epoch + fin[c], a, rank, step, -1)) return false;
  return true;
}

//@@ conv_bf16: a bf16 reduction
/* bf16 <-> f32: widen exactly once on the way in, round to nearest even once on the way out. */
__device__ __forceinline__ float sc_widen(unsigned short h) {
  return __int_as_float((int)((sc_u32)h << 16));
}
__device__ __forceinline__ unsigned short sc_narrow(float f) {
  sc_u32 u = (sc_u32)__float_as_int(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
//@@ conv_f16: an f16 reduction
/* f16 <-> f32: widen exactly once on the way in, round to nearest even once on the way out. */
__device__ __forceinline__ float sc_widen(unsigned short h) {
  sc_u32 s = (sc_u32)(h >> 15) << 31, e = (h >> 10) & 31u, m = h & 1023u, u;
  if (e == 31u) u = s | 0x7f800000u | (m << 13);
  else if (e) u = s | ((e + 112u) << 23) | (m << 13);
  else if (!m) u = s;
  else { int k = -1; do { m <<= 1; k++; } while (!(m & 1024u)); u = s | ((sc_u32)(112 - k) << 23) | ((m & 1023u) << 13); }
  return __int_as_float((int)u);
}
__device__ __forceinline__ unsigned short sc_narrow(float f) {
  sc_u32 u = (sc_u32)__float_as_int(f);
  sc_u32 s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(s | 0x7e00u);
  if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);
  if (a >= 0x38800000u) { sc_u32 r = a - 0x38000000u, h = r >> 13, m = r & 0x1fffu;
    if (m > 0x1000u || (m == 0x1000u && (h & 1u))) h++;
    return (unsigned short)(s | h); }
  if (a < 0x33000000u) return (unsigned short)s;
  sc_u32 e = a >> 23, mm = (a & 0x7fffffu) | 0x800000u, sh = 126u - e;
  sc_u32 h = mm >> sh, rem = mm & ((1u << sh) - 1u), half = 1u << (sh - 1u);
  if (rem > half || (rem == half && (h & 1u))) h++;
  return (unsigned short)(s | h);
}
//@@ conv_kernels: f16 and bf16: the conversion kernels
extern "C" __global__ void @ENTRY_WIDEN@(const unsigned short *in, float *out, sc_u64 n) {
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x)
    out[i] = sc_widen(in[i]);
}
extern "C" __global__ void @ENTRY_NARROW@(const float *in, unsigned short *out, sc_u64 n) {
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x)
    out[i] = sc_narrow(in[i]);
}

//@@ avg_int: avg of an integer type
/* avg: the sum divided by nranks once, in the accumulation type. */
extern "C" __global__ void @ENTRY_AVG@(sc_acc *x, sc_u64 n, int nranks) {
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x) {
    sc_acc q = x[i] / (sc_acc)nranks;
    x[i] = q;
  }
}

//@@ avg_float: avg of a float type
/* avg: the sum divided by nranks once, in the accumulation type; a NaN stays the default NaN (the GPU's division
 * would give 0x7fffffff where the CPU keeps the quiet NaN's bits). */
extern "C" __global__ void @ENTRY_AVG@(sc_acc *x, sc_u64 n, int nranks) {
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < n; i += (sc_u64)gridDim.x * blockDim.x) {
    sc_acc q = x[i] / (sc_acc)nranks;
    x[i] = q != q ? @NAN@ : q;
  }
}

//@@ exact: exact mode (SCHEDC_SUM_EXACT, SCHEDC_AVG_EXACT): the grid's words, onto the grid, back once
/* Exact mode (docs/determinism.md "Exact mode"): f32, f16 and bf16 values as 64-bit integers on
 * one grid shared by every rank (q stands for q * 2^g), which the plan sums (sc_acc is long long,
 * sc_op wraps), rounded back once. Integer-only twins of runtime/core/exact.c, bit for bit: the
 * words of sc_exact_stats, sc_exact_in, sc_exact_out. One source for the three formats and both
 * ops (the format comes at run time): a plan compiles once for all six. The parameter block:
 * codegen/cuda_abi.h (sc_xargs). */
#define SC_XARGS 1
struct sc_xargs { const void *in; void *out; sc_u64 n; long long fmt, g, nterms, avg, special; };
static_assert(sizeof(sc_xargs) == 8 * 8, "the runtime fills 8 words (cuda_abi.h: SC_CUDA_XARGS_WORDS)");
/* A format: significand bits with the hidden one, smallest normal exponent, element bytes, and
 * the bits of its infinity, sign and default NaN. */
struct sc_xfmt { int p, emin, bytes; sc_u32 inf, sign, qnan; };
__device__ __forceinline__ sc_xfmt sc_xfmt_of(long long fmt) {
  sc_xfmt f;
  if (fmt == 1) { f.p = 11; f.emin = -14; f.bytes = 2; f.inf = 0x7c00u; f.sign = 0x8000u; f.qnan = 0x7e00u; }
  else if (fmt == 2) { f.p = 8; f.emin = -126; f.bytes = 2; f.inf = 0x7f80u; f.sign = 0x8000u; f.qnan = 0x7fc0u; }
  else { f.p = 24; f.emin = -126; f.bytes = 4; f.inf = 0x7f800000u; f.sign = 0x80000000u; f.qnan = 0x7fc00000u; }
  return f;
}
__device__ __forceinline__ sc_u32 sc_xget(const sc_xfmt &f, const void *p, sc_u64 i) {
  return f.bytes == 4 ? ((const sc_u32 *)p)[i] : (sc_u32)((const unsigned short *)p)[i];
}

/* Element bits b onto the grid 2^g: b = ±m 2^k (k its last bit's exponent); sh = k - g >= 0:
 * m << sh (below 2^62: g leaves the headroom); else m shifted right by s = g - k, to nearest, ties
 * to even (adding half - 1, plus the bit that becomes the last); s capped at 40, where any m
 * (< 2^24) gives 0 as any larger s does. exact.c's in_f32 for every format. */
__device__ __forceinline__ long long sc_xq(const sc_xfmt &f, sc_u32 b, long long g) {
  int mb = f.p - 1;
  sc_u32 a = b & (f.sign - 1u), ef = a >> mb;
  long long m = (long long)((a & ((1u << mb) - 1u)) | (ef ? 1u << mb : 0u));
  long long sh = (long long)(ef ? ef : 1u) + f.emin - 1 - mb - g;
  long long s = sh < 0 ? -sh : 0;
  s = s > 40 ? 40 : s;
  long long up = m << (sh > 0 ? sh : 0);
  long long half = (1LL << s) >> 1, pos = s > 0 ? 1 : 0;
  long long dn = (m + (half - pos) + ((m >> s) & pos)) >> s;
  long long q = sh >= 0 ? up : dn;
  return (b & f.sign) ? -q : q;
}

/* The format's value nearest to (-1)^neg (m + sticky·ε) 2^e, ties to even, as its bits (exact.c's
 * sc_exact_round): subnormals kept, past the largest finite value the infinity; exact 0 is +0. */
__device__ __noinline__ sc_u32 sc_xround(const sc_xfmt &f, int neg, sc_u64 m, int e, int sticky) {
  if (!m) return 0u;
  int L = 64 - __clzll((long long)m), top = e + L - 1;
  int lsb = (top >= f.emin ? top : f.emin) - (f.p - 1);
  int s = lsb - e;
  sc_u64 mant;
  if (s <= 0) {
    mant = m << -s;
  } else if (s > 64) {
    mant = 0;
  } else {
    sc_u64 rem = s == 64 ? m : m & ((1ull << s) - 1), half = 1ull << (s - 1);
    mant = s == 64 ? 0 : m >> s;
    if (rem > half || (rem == half && (sticky || (mant & 1)))) mant++;
  }
  sc_u64 bits = ((sc_u64)(lsb - (f.emin - (f.p - 1))) << (f.p - 1)) + mant;
  if (bits >= f.inf) bits = f.inf;
  return (sc_u32)bits | (neg ? f.sign : 0u);
}

/* avg: the exact quotient |s| / n (1 <= n < 2^31) as m 2^e plus a sticky bit (the remainder), by
 * long division in 32-bit digits until m has at least 33 significant bits (every format keeps at
 * most 24), so rounding m with the sticky bit rounds the quotient (exact.c's avg_bits). */
__device__ __forceinline__ sc_u32 sc_xavg(const sc_xfmt &f, long long s, long long n, int g) {
  sc_u64 a = s < 0 ? 0 - (sc_u64)s : (sc_u64)s, un = (sc_u64)n, m = a / un, r = a % un;
  int e = g;
  if (!a) return 0u;
  while (m < (1ull << 32)) {
    sc_u64 t = r << 32;
    m = (m << 32) | (t / un), r = t % un, e -= 32;
  }
  return sc_xround(f, s < 0, m, e, r != 0);
}

//@@ exact_kernels: exact mode's three kernels (after the exact section's helpers)
/* The grid's words of a rank's input: the largest finite magnitude's bits (a format orders
 * magnitudes as their bits), some NaN, some +Inf, some -Inf; the host makes sc_exact_stats' words
 * of them and exchanges them. out's 4 words are 0 before (the host clears them). */
extern "C" __global__ void @ENTRY_XSTATS@(sc_xargs x) {
  const sc_xfmt f = sc_xfmt_of(x.fmt);
  sc_u32 fmax = 0, nan = 0, pinf = 0, ninf = 0;
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < x.n; i += (sc_u64)gridDim.x * blockDim.x) {
    sc_u32 b = sc_xget(f, x.in, i), a = b & (f.sign - 1u);
    if (a > f.inf) nan = 1u;
    else if (a == f.inf) { if (b & f.sign) ninf = 1u; else pinf = 1u; }
    else if (a > fmax) fmax = a;
  }
  sc_u32 *w = (sc_u32 *)x.out;
  if (fmax) atomicMax(w, fmax);
  if (nan) atomicMax(w + 1, 1u);
  if (pinf) atomicMax(w + 2, 1u);
  if (ninf) atomicMax(w + 3, 1u);
}
/* In: the input onto the grid (zeros when the result is special: they travel, the value is known). */
extern "C" __global__ void @ENTRY_XIN@(sc_xargs x) {
  const sc_xfmt f = sc_xfmt_of(x.fmt);
  long long *out = (long long *)x.out;
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < x.n; i += (sc_u64)gridDim.x * blockDim.x)
    out[i] = x.special ? 0 : sc_xq(f, sc_xget(f, x.in, i), x.g);
}
/* Out: the sums rounded once to the format (avg: the exact quotient by nterms), or every element
 * the special value (1: the default NaN, 2: +Inf, 3: -Inf). */
extern "C" __global__ void @ENTRY_XOUT@(sc_xargs x) {
  const sc_xfmt f = sc_xfmt_of(x.fmt);
  const long long *in = (const long long *)x.in;
  sc_u32 sv = x.special == 1 ? f.qnan : x.special == 2 ? f.inf : f.inf | f.sign;
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < x.n; i += (sc_u64)gridDim.x * blockDim.x) {
    long long s = in[i];
    sc_u32 b = x.special ? sv
               : x.avg ? sc_xavg(f, s, x.nterms, (int)x.g)
                       : sc_xround(f, s < 0, s < 0 ? 0 - (sc_u64)s : (sc_u64)s, (int)x.g, 0);
    if (f.bytes == 4) ((sc_u32 *)x.out)[i] = b;
    else ((unsigned short *)x.out)[i] = (unsigned short)b;
  }
}
//@@ quant: a quantized wire (q8, q16): the grid's words, onto the grid as the wire's integers, back once
/* Quantized sums (docs/compression.md): each rank's value an 8- or 16-bit integer on the call's grid
 * (sc_acc is the wire's type, sc_op wraps; the headroom keeps every sum in range), on exact mode's
 * integer helpers above, so the bits are runtime/core/quant.c's: onto the grid to nearest, ties to
 * even (sc_xq), the sum rounded once (sc_xround; avg: the exact quotient, sc_xavg). The block is
 * sc_xargs with `special` standing for the wire's bytes (codegen/cuda_abi.h). */
extern "C" __global__ void @ENTRY_QSTATS@(sc_xargs x) {
  const sc_xfmt f = sc_xfmt_of(x.fmt);
  sc_u32 amax = 0, nan = 0, inf = 0;
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < x.n; i += (sc_u64)gridDim.x * blockDim.x) {
    sc_u32 a = sc_xget(f, x.in, i) & (f.sign - 1u), at = 0xffffffffu - (sc_u32)(i < 0xfffffffeull ? i : 0xfffffffeull);
    if (a > amax) amax = a;
    if (a > f.inf && at > nan) nan = at;
    else if (a == f.inf && at > inf) inf = at;
  }
  sc_u32 *w = (sc_u32 *)x.out;
  if (amax) atomicMax(w, amax);
  if (nan) atomicMax(w + 1, nan);
  if (inf) atomicMax(w + 2, inf);
}
extern "C" __global__ void @ENTRY_QIN@(sc_xargs x) {
  const sc_xfmt f = sc_xfmt_of(x.fmt);
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < x.n; i += (sc_u64)gridDim.x * blockDim.x) {
    long long q = sc_xq(f, sc_xget(f, x.in, i), x.g); /* |q| < 2^(bits - 1): the grid's headroom */
    if (x.special == 1) ((signed char *)x.out)[i] = (signed char)q;
    else ((short *)x.out)[i] = (short)q;
  }
}
extern "C" __global__ void @ENTRY_QOUT@(sc_xargs x) {
  const sc_xfmt f = sc_xfmt_of(x.fmt);
  for (sc_u64 i = blockIdx.x * (sc_u64)blockDim.x + threadIdx.x; i < x.n; i += (sc_u64)gridDim.x * blockDim.x) {
    long long s = x.special == 1 ? (long long)((const signed char *)x.in)[i] : (long long)((const short *)x.in)[i];
    sc_u32 b = x.avg ? sc_xavg(f, s, x.nterms, (int)x.g) : sc_xround(f, s < 0, s < 0 ? 0 - (sc_u64)s : (sc_u64)s, (int)x.g, 0);
    if (f.bytes == 4) ((sc_u32 *)x.out)[i] = b;
    else ((unsigned short *)x.out)[i] = (unsigned short)b;
  }
}
