/*
 * cuda_emit.c — the CUDA source generator (see cuda_emit.h): the plan's own parts (types,
 * sc_args's fields from cuda_abi.h, sc_op for the dtype and op, each rank's write groups, the
 * kernels) around the fixed device code of cuda_device.cuh (waits, tiles, the reduce chain,
 * checksums, entry and drain, conversions, avg), which is compiled in. A rank runs as one or more
 * thread blocks; block b of every rank owns part b of every chunk (tiles cut at 16-byte
 * boundaries and dealt to the blocks in turn) with its own counters, so blocks pipeline
 * independently. Each block walks the rank's write groups in order: thread 0 spins on the
 * counters the group needs (RAW on source versions, WAR on its own reads) with a clock64 budget,
 * the block computes its part with 16-byte vectors, then thread 0 fences, counts its reads and
 * publishes the cell's version. The arithmetic is the CPU kernels': IEEE round-to-nearest, NaN
 * results as the default NaN, min/max with NaN winning and -0 < +0, integers wrapping; compile
 * with --fmad=false. Exact mode sums i64 on a grid (the "exact" section converts, integers only).
 * Two variants on top: checksums (sc_seal after each publishing write,
 * sc_check before each read) and a plan split across nodes (one phase per launch, cross-node
 * sources read from mirror slots; codegen/cuda_split.h). golden.cuda_emit holds the text.
 */
#include "cuda_emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "opreg.h"
#include "strbuf.h"

typedef sc_strbuf sb; /* the library's one growable string: a sticky oom, checked once at the end */

static void put(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  sc_strbuf_vprintf(b, fmt, ap);
  va_end(ap);
}

/* The fixed device code (cuda_device.cuh, compiled in as this array by cmake/embed.cmake):
 * sections that start at a line "//@@ NAME: note" and run to the next one. */
extern const unsigned char sc_cuda_device_cuh[];

static const char *default_nan(int dtype);

/* The value of placeholder @key@ (klen bytes) in the fixed code, or NULL: not a placeholder. */
static const char *placeholder(const char *key, size_t klen, int dtype, char num[16]) {
#define IS(k) (klen == sizeof(k) - 1 && !memcmp(key, k, klen))
  if (IS("EPOCH_BITS")) { snprintf(num, 16, "%d", SC_CUDA_EPOCH_BITS); return num; }
  if (IS("ENTRY_WIDEN")) return SC_CUDA_ENTRY_WIDEN;
  if (IS("ENTRY_NARROW")) return SC_CUDA_ENTRY_NARROW;
  if (IS("ENTRY_AVG")) return SC_CUDA_ENTRY_AVG;
  if (IS("ENTRY_XSTATS")) return SC_CUDA_ENTRY_XSTATS;
  if (IS("ENTRY_XIN")) return SC_CUDA_ENTRY_XIN;
  if (IS("ENTRY_XOUT")) return SC_CUDA_ENTRY_XOUT;
  if (IS("ENTRY_QSTATS")) return SC_CUDA_ENTRY_QSTATS;
  if (IS("ENTRY_QIN")) return SC_CUDA_ENTRY_QIN;
  if (IS("ENTRY_QOUT")) return SC_CUDA_ENTRY_QOUT;
  if (IS("NAN")) return default_nan(dtype);
#undef IS
  return NULL;
}

/* Section `name` of the fixed code, its placeholders replaced (for dtype). The array is built
 * with the library, so a missing section or an unknown placeholder is this file out of step
 * with cuda_device.cuh: the emission fails (NULL source), and golden.cuda_emit names it. */
static void put_fixed(sb *b, const char *name, int dtype) {
  size_t nlen = strlen(name);
  const char *text = (const char *)sc_cuda_device_cuh, *p = text;
  for (;;) {
    p = strstr(p, "//@@ ");
    if (!p) { b->oom = 1; return; }
    if ((p == text || p[-1] == '\n') && !strncmp(p + 5, name, nlen) && p[5 + nlen] == ':') break;
    p += 5;
  }
  p = strchr(p, '\n');
  if (!p) { b->oom = 1; return; }
  p++;
  const char *end = strstr(p, "\n//@@ ");
  end = end ? end + 1 : p + strlen(p);
  while (p < end) {
    const char *at = memchr(p, '@', (size_t)(end - p));
    if (!at) { sc_strbuf_add(b, p, (size_t)(end - p)); return; }
    const char *close = memchr(at + 1, '@', (size_t)(end - at - 1));
    char num[16];
    const char *v = close ? placeholder(at + 1, (size_t)(close - at - 1), dtype, num) : NULL;
    if (!v) { b->oom = 1; return; }
    sc_strbuf_add(b, p, (size_t)(at - p));
    sc_strbuf_puts(b, v);
    p = close + 1;
  }
}

/* Exact mode (SCHEDC_SUM_EXACT, SCHEDC_AVG_EXACT) for a reduction: the working buffer holds i64
 * on the call's grid, summed with wrapping integer adds (the plan's order no longer matters); the
 * conversions (the "exact" section) take the format at run time, so the source is the same for
 * f32, f16 and bf16, sum and avg. */
static int exact_op(int op) { return op == SCHEDC_SUM_EXACT || op == SCHEDC_AVG_EXACT; }
/* A quantized wire (names.h SC_OP_Q8, SC_OP_Q16; docs/compression.md): the working buffer holds
 * the wire's 8- or 16-bit integers on the call's grid, summed with wrapping adds; the conversions
 * ("quant", on exact mode's integer helpers) take the format and avg at run time. */
static int wire_op(int op) { return sc_op_wire(op); }

/* Element type of the working buffer in device code: the accumulation type of a reduction
 * (f16/bf16 accumulate in f32; exact mode: i64), or, for a plan that only copies (allgather,
 * broadcast), an unsigned type of the element's size, so every bit pattern (NaN payloads too)
 * moves untouched. */
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

static void emit_prelude(sb *b, const sc_ir *ir, int dtype, int op, int copy_only, int check, int split) {
  put(b, "typedef unsigned int sc_u32;\ntypedef unsigned long long sc_u64;\ntypedef %s sc_acc;\n",
      wire_op(op) && !copy_only ? (wire_op(op) == 8 ? "signed char" : "short")
      : exact_op(op) && !copy_only ? "long long" : elem_type(dtype, copy_only));
  put(b, "#define SC_NRANKS %u\n#define SC_NCHUNKS %uull\n", ir->nranks, ir->nchunks);
  put_fixed(b, "defs", dtype);
  put_fixed(b, "args_doc", dtype);
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
  if (exact_op(op) && !copy_only) emit_op(b, SCHEDC_I64, SCHEDC_SUM, 0); /* the grid's integers */
  else if (wire_op(op) && !copy_only) /* the wire's integers: the headroom keeps every sum in range */
    put(b, "__device__ __forceinline__ sc_acc sc_op(sc_acc a, sc_acc b) {\n  return (sc_acc)((%s)a + (%s)b); /* wraps */\n}\n\n",
        wire_op(op) == 8 ? "unsigned char" : "unsigned short", wire_op(op) == 8 ? "unsigned char" : "unsigned short");
  else emit_op(b, dtype, op, copy_only);
  put_fixed(b, "core", dtype);
  /* Checksum mode: the sum of a cell part is the sum, mod 2^64, of mix(element bits, element
   * index): mix is a bijection of the bits for a given index, so any change of any one element
   * changes the sum, and it adds up in any order, so a block computes it in parallel with the
   * same result on the writer and the reader. */
  if (check) put_fixed(b, "checksums", dtype);
  put_fixed(b, "enter_head", dtype);
  if (check) put_fixed(b, "enter_seal", dtype); /* the inputs' sums, before the versions that let readers in */
  put_fixed(b, "enter_tail", dtype);
}

static void emit_conversions(sb *b, int dtype, int op) {
  if (exact_op(op)) { put_fixed(b, "exact", dtype); put_fixed(b, "exact_kernels", dtype); return; }
  if (wire_op(op)) { put_fixed(b, "exact", dtype); put_fixed(b, "quant", dtype); return; }
  if (dtype != SCHEDC_F16 && dtype != SCHEDC_BF16) return;
  put_fixed(b, dtype == SCHEDC_BF16 ? "conv_bf16" : "conv_f16", dtype);
  put_fixed(b, "conv_kernels", dtype);
}

static void emit_finish(sb *b, int dtype, int op) {
  if (op != SCHEDC_AVG) return;
  put_fixed(b, dtype == SCHEDC_I32 || dtype == SCHEDC_I64 ? "avg_int" : "avg_float", dtype);
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
  if (dtype < 0 || dtype >= SCHEDC_DTYPE_COUNT_ || op < 0 ||
      (op >= SCHEDC_OP_COUNT_ && !sc_opreg_get(op) && !exact_op(op) && !wire_op(op)))
    return NULL;
  if ((exact_op(op) || wire_op(op)) && dtype != SCHEDC_F32 && dtype != SCHEDC_F16 && dtype != SCHEDC_BF16) return NULL;
  if (rank >= (int)ir->nranks) return NULL;
  int copy_only = ir->collective == SCHEDC_ALLGATHER || ir->collective == SCHEDC_BROADCAST;
  int exact = (exact_op(op) || wire_op(op)) && !copy_only;
  sb b = SC_STRBUF_INIT;
  put(&b, "/* schedc generated code: plan '%s' (%s, %u ranks, %u chunks, %u steps), %s %s, %s.\n"
          " * Straight-line write groups over the primitives below; no headers, everything comes in as\n"
          " * kernel parameters. Compile with --fmad=false: reductions must be add.rn/mul.rn, never fma. */\n",
      ir->name, sc_ir_collective_name(ir->collective), ir->nranks, ir->nchunks, ir->nsteps,
      exact ? "f32/f16/bf16" : sc_dtype_name(dtype),
      !exact ? sc_op_name(op) : wire_op(op) == 8 ? "q8 sum/avg" : wire_op(op) ? "q16 sum/avg" : "exact sum/avg",
      rank < 0 ? "all ranks" : "one rank");
  emit_prelude(&b, ir, dtype, op, copy_only, check, sp != NULL);
  if (!copy_only) emit_conversions(&b, dtype, op);
  if (!copy_only) emit_finish(&b, dtype, op);
  for (uint32_t r = 0; r < ir->nranks; r++)
    if (rank < 0 || (uint32_t)rank == r) emit_rank(&b, ir, prog, r, rank >= 0, check, sp);
  if (rank < 0) emit_all(&b, ir);
  if (b.oom) { sc_strbuf_free(&b); return NULL; }
  return b.p;
}
