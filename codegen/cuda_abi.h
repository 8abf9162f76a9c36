/*
 * cuda_abi.h — the one definition of what the generated kernels take from the runtime: the
 * parameter block (struct sc_args, 64-bit words), the entry points, the failure record and the
 * tile length. The emitter prints sc_args from the field list below (cuda_emit.c) and the
 * runtime places each field by the same list (runtime/cuda/cuda_phase.c), so they cannot drift.
 */
#ifndef SC_CUDA_ABI_H
#define SC_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* Counters of a call start at epoch = call number << SC_CUDA_EPOCH_BITS (versions and read counts
 * per call stay below 2^SC_CUDA_EPOCH_BITS). The failure record err has SC_CUDA_ERR_WORDS uint32
 * words: [0] set once by the first failure (1: a wait timed out, 2: a corrupted transfer);
 * [1..6] rank, step, peer (-1: a reader of its buffer) or sender, chunk, got and wanted sums;
 * [8..14] the call's first transfer repaired by reading it again: call number (epoch >> bits, low
 * 32 bits), rank, step, sender, chunk, sums. */
#define SC_CUDA_EPOCH_BITS 20
#define SC_CUDA_ERR_WORDS 16
#define SC_ABI_STR_(x) #x
#define SC_ABI_STR(x) SC_ABI_STR_(x)

/* The parameter block, in order: X(name, kind, device type, variant, doc). A TABLE holds one
 * word per rank (sc_args has [SC_NRANKS] of them), a SCALAR one word. A field is in the block
 * when its variant is: BASE always, CHECK with per-transfer checksums (SCHEDC_VERIFY=checksum),
 * SPLIT for a plan cut into phases across nodes (cuda_split.h). Every device type is 8 bytes,
 * so word i of the runtime's block is the i-th word of the struct (the emitted code asserts
 * sizeof(sc_args)). Counters are per (cell, block): ver[r][c * nblk + b], reads[r][...]. */
#define SC_CUDA_ABI_FIELDS(X)                                                                                 \
  X(buf, TABLE, "sc_acc *", BASE, "each rank's working buffer")                                               \
  X(temp, TABLE, "sc_acc *", BASE, "temp slots: tstride elements per (slot, block)")                          \
  X(ver, TABLE, "sc_u64 *", BASE, "each cell's published version")                                            \
  X(reads, TABLE, "sc_u64 *", BASE, "reads done of each cell's current version")                              \
  X(err, SCALAR, "sc_u32 *", BASE, "the failure record, " SC_ABI_STR(SC_CUDA_ERR_WORDS) " words")             \
  X(count, SCALAR, "sc_u64", BASE, "elements of the working buffer")                                          \
  X(tstride, SCALAR, "sc_u64", BASE, "elements per (temp slot, block), a multiple of SC_VW")                  \
  X(tile, SCALAR, "sc_u64", BASE, "elements per tile (sc_tile0), a multiple of SC_VW")                        \
  X(epoch, SCALAR, "sc_u64", BASE, "the call's counter base: call number << " SC_ABI_STR(SC_CUDA_EPOCH_BITS)) \
  X(budget, SCALAR, "long long", BASE, "clock64 cycles any one wait may take")                                \
  X(sum, TABLE, "sc_u64 *", CHECK, "sum[r][cell]: rank r's cell part at its published version")               \
  X(flip_src, SCALAR, "long long", CHECK, "injection: sender of the transfer to corrupt (< 0: none)")         \
  X(flip_dst, SCALAR, "long long", CHECK, "injection: its receiver")                                          \
  X(flip_step, SCALAR, "long long", CHECK, "injection: its step")                                             \
  X(flip_chunk, SCALAR, "long long", CHECK, "injection: its chunk (block 0's first read sees a flip)")        \
  X(flip_bit, SCALAR, "long long", CHECK, "injection: the bit of the part flipped (< 0: its middle)")         \
  X(repair, SCALAR, "long long", CHECK, "1: a transfer whose sum is wrong is read once more")                 \
  X(mir, TABLE, "sc_acc *", SPLIT, "mirror slot k of rank r: mir[r] + k * mstride")                           \
  X(msum, TABLE, "sc_u64 *", SPLIT, "the mirrored payloads' sums, nblk per slot")                             \
  X(mstride, SCALAR, "sc_u64", SPLIT, "elements per mirror slot")                                             \
  X(phase, SCALAR, "long long", SPLIT, "the phase this launch runs")

enum { SC_ABI_TABLE, SC_ABI_SCALAR };
/* Variants: bits; a field is in the block when all its bits are in the variant's. */
enum { SC_ABI_BASE = 0, SC_ABI_CHECK = 1, SC_ABI_SPLIT = 2 };

typedef enum sc_abi_field {
#define SC_ABI_X(name, kind, type, variant, doc) SC_ABI_##name,
  SC_CUDA_ABI_FIELDS(SC_ABI_X)
#undef SC_ABI_X
  SC_ABI_NFIELDS
} sc_abi_field;

/* Ranks of a group: every table holds nranks words, and the whole block must stay within CUDA's
 * 4 KiB of kernel parameters (schedc_all also takes two ints). */
#define SC_CUDA_MAX_RANKS 64
enum {
  SC_CUDA_ABI_MAX_WORDS = 0
#define SC_ABI_X(name, kind, type, variant, doc) +(SC_ABI_##kind == SC_ABI_TABLE ? SC_CUDA_MAX_RANKS : 1)
  SC_CUDA_ABI_FIELDS(SC_ABI_X)
#undef SC_ABI_X
};
_Static_assert(SC_CUDA_ABI_MAX_WORDS * 8 + 8 <= 4096, "the kernel parameter block exceeds CUDA's 4 KiB");

static inline int sc_cuda_abi_kind(int f) {
  static const unsigned char kind[] = {
#define SC_ABI_X(name, kind, type, variant, doc) SC_ABI_##kind,
      SC_CUDA_ABI_FIELDS(SC_ABI_X)
#undef SC_ABI_X
  };
  return kind[f];
}

/* Whether field f is in the block of `variant` (SC_ABI_* bits). */
static inline int sc_cuda_abi_has(int f, unsigned variant) {
  static const unsigned char var[] = {
#define SC_ABI_X(name, kind, type, variant, doc) SC_ABI_##variant,
      SC_CUDA_ABI_FIELDS(SC_ABI_X)
#undef SC_ABI_X
  };
  return (var[f] & variant) == var[f];
}

/* The word of field f (its rank 0 word for a table) in the block of nranks and variant, or -1
 * when the variant has no such field; f = SC_ABI_NFIELDS: the block's length in words. */
static inline int sc_cuda_abi_index(int f, int nranks, unsigned variant) {
  int at = 0;
  for (int i = 0; i < f; i++)
    if (sc_cuda_abi_has(i, variant)) at += sc_cuda_abi_kind(i) == SC_ABI_TABLE ? nranks : 1;
  return f == SC_ABI_NFIELDS || sc_cuda_abi_has(f, variant) ? at : -1;
}

/* Entry points (extern "C"), which the runtime looks up by name:
 *   schedc_all(sc_args, int first, int count): ranks [first, first + count), count * nblk blocks
 *     (every rank's code in one unit);
 *   schedc_rank<R>(sc_args): rank R alone, nblk blocks (a unit of one rank's code);
 *   schedc_widen(const u16 *in, float *out, u64 n), schedc_narrow(const float *in, u16 *out,
 *     u64 n): f16/bf16 <-> f32; schedc_avg(sc_acc *x, u64 n, int nranks): the division of avg. */
#define SC_CUDA_ENTRY_ALL "schedc_all"
#define SC_CUDA_ENTRY_RANK "schedc_rank"
#define SC_CUDA_ENTRY_WIDEN "schedc_widen"
#define SC_CUDA_ENTRY_NARROW "schedc_narrow"
#define SC_CUDA_ENTRY_AVG "schedc_avg"
/* Exact mode (SCHEDC_SUM_EXACT, SCHEDC_AVG_EXACT): one source for f32, f16 and bf16, sum and avg
 * (the plan sums 64-bit integers whatever they stand for), three kernels of one parameter, the
 * struct sc_xargs of SC_CUDA_XARGS_WORDS 64-bit words, in this order:
 *   in, out (device pointers), n (elements), fmt (SC_CUDA_XFMT_*), g (the grid: q stands for
 *   q * 2^g), nterms (summands: avg divides by it), avg (1: avg), special (SC_CUDA_XSPECIAL_*);
 *   schedc_xstats: in's n elements (the data type) -> out's 4 uint32 words, which must be 0
 *     before: the largest finite magnitude's bits, some NaN, some +Inf, some -Inf (0 or 1);
 *   schedc_xin: n elements onto the grid -> n int64 (round to nearest, ties to even; 0 when special);
 *   schedc_xout: n int64 sums -> n elements, rounded once (avg: the exact quotient by nterms);
 *     every element the special value when there is one. */
#define SC_CUDA_ENTRY_XSTATS "schedc_xstats"
#define SC_CUDA_ENTRY_XIN "schedc_xin"
#define SC_CUDA_ENTRY_XOUT "schedc_xout"
#define SC_CUDA_XARGS_WORDS 8
/* A quantized wire (docs/compression.md; the kernel sets of names.h's SC_OP_Q8, SC_OP_Q16): three
 * kernels of the same block, sc_xargs, its last word `special` standing for the wire's integer bytes
 * (1 or 2) there; the working type is the wire's integers:
 *   schedc_qstats: in's n elements -> out's 3 uint32 words, 0 before: the largest magnitude's bits
 *     (NaN and Inf included: the bits order them), and 0xffffffff minus the index (capped at
 *     0xfffffffe) of the first NaN, of the first infinity (0: none);
 *   schedc_qin: n elements onto the grid -> n wire integers (round to nearest, ties to even);
 *   schedc_qout: n wire integer sums -> n elements, rounded once (avg: the exact quotient by nterms). */
#define SC_CUDA_ENTRY_QSTATS "schedc_qstats"
#define SC_CUDA_ENTRY_QIN "schedc_qin"
#define SC_CUDA_ENTRY_QOUT "schedc_qout"
enum { SC_CUDA_XFMT_F32 = 0, SC_CUDA_XFMT_F16 = 1, SC_CUDA_XFMT_BF16 = 2 };
/* the same values as runtime/core/exact.h's SC_EXACT_FINITE, _NAN, _PINF, _NINF */
enum { SC_CUDA_XSPECIAL_NONE = 0, SC_CUDA_XSPECIAL_NAN = 1, SC_CUDA_XSPECIAL_PINF = 2, SC_CUDA_XSPECIAL_NINF = 3 };

/* Tiles: a chunk [lo, hi) is cut at 16-byte boundaries (absolute element indices) from lo rounded
 * down to a vector into tiles of `tile` elements, tile i going to block i % nblk. The length is
 * the host's, one for every chunk and rank of a call: the span per block rounded up to a vector,
 * capped at the largest power of two of bytes within SC_CUDA_TILE_WINDOW / nblk (the cap never
 * under SC_CUDA_TILE_MIN, a power of two), never under a vector. The span (sc_cuda_span) bounds
 * every chunk's from its start rounded down: ceil(K / nchunks) elements plus a vector less one. */
#define SC_CUDA_TILE_WINDOW 4194304
#define SC_CUDA_TILE_MIN 32768

static inline uint64_t sc_cuda_span(uint64_t K, uint32_t nchunks, size_t esz) {
  return (K + nchunks - 1) / nchunks + 16 / esz - 1;
}

static inline uint64_t sc_cuda_tile(uint64_t K, uint32_t nchunks, size_t esz, int nblk) {
  uint64_t vw = 16 / esz, nb = (uint64_t)nblk, L = ((sc_cuda_span(K, nchunks, esz) + nb - 1) / nb + vw - 1) / vw * vw;
  uint64_t cap = SC_CUDA_TILE_MIN;
  while (cap * 2 <= SC_CUDA_TILE_WINDOW / nb) cap *= 2;
  if (L > cap / esz) L = cap / esz;
  return L ? L : vw;
}

/* Elements per (temp slot, block): a block's part of the longest span, ceil(tiles / nblk) tiles
 * one after another (sc_poff), plus two vectors, a multiple of a vector. */
static inline uint64_t sc_cuda_tstride(uint64_t K, uint32_t nchunks, size_t esz, int nblk, uint64_t tile) {
  uint64_t vw = 16 / esz, nb = (uint64_t)nblk, m = sc_cuda_span(K, nchunks, esz);
  uint64_t part = ((m + tile - 1) / tile + nb - 1) / nb * tile;
  return part + 2 * vw;
}

#endif
