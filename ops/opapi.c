/*
 * opapi.c — schedc_op_create / schedc_op_get_info / schedc_op_free: check the file (opcheck.c),
 * compile the element loop (opcc.c), test commutativity bit for bit on the compiled code, and
 * register the op (common/opreg.h) so every layer taking a schedc_op reaches it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <dlfcn.h>

#include "err.h"
#include "hash.h"
#include "opreg.h"
#include "ops.h"

typedef struct opx {
  sc_opdef def;              /* first: the registry holds &def */
  sc_opso so;
  sc_opsrc src;
  schedc_op_info info;
  int value;
} opx;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t rnd(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* Bit patterns that break symmetric-looking formulas: signed zeros, infinities, NaNs (quiet,
 * signalling, with payloads, negative), subnormals, the extremes, and small exact values. */
static const uint32_t SPEC32F[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7fa00000,
                                   0x7fc00001, 0x00000001, 0x80000001, 0x007fffff, 0x807fffff, 0x00800000, 0x80800000,
                                   0x7f7fffff, 0xff7fffff, 0x3f800000, 0xbf800000, 0x3f800001, 0x40000000, 0x3f000000,
                                   0x40400000, 0xc0400000, 0x33800000, 0x4b800000, 0x34000000};
static const uint64_t SPEC64F[] = {0, 0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
                                   0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff4000000000000ull,
                                   0x7ff8000000000001ull, 1, 0x8000000000000001ull, 0x000fffffffffffffull,
                                   0x800fffffffffffffull, 0x0010000000000000ull, 0x8010000000000000ull,
                                   0x7fefffffffffffffull, 0xffefffffffffffffull, 0x3ff0000000000000ull,
                                   0xbff0000000000000ull, 0x3ff0000000000001ull, 0x4000000000000000ull,
                                   0x3fe0000000000000ull, 0x4008000000000000ull, 0xc008000000000000ull,
                                   0x3cb0000000000000ull, 0x4340000000000000ull};
static const int64_t SPECI[] = {0, 1, -1, 2, -2, 3, 7, -7, 0x7fffffffll, -0x7fffffffll - 1, 0x7ffffffell, -0x7fffffffll,
                                0x55555555ll, (int64_t)0xaaaaaaaall, 0x7fffffffffffffffll, -0x7fffffffffffffffll - 1,
                                0x7ffffffffffffffell, (int64_t)0x8000000000000001ull, 0x5555555555555555ll,
                                (int64_t)0xaaaaaaaaaaaaaaaaull, 0x100000000ll, -0x100000000ll, 255, -256};

/* Element i of a specials list, as the type's bits. */
static uint64_t special(schedc_dtype t, uint64_t i) {
  switch (t) {
  case SCHEDC_F32: return SPEC32F[i % (sizeof SPEC32F / sizeof SPEC32F[0])];
  case SCHEDC_F64: return SPEC64F[i % (sizeof SPEC64F / sizeof SPEC64F[0])];
  case SCHEDC_I32: return (uint32_t)(int32_t)SPECI[i % 12];
  default: return (uint64_t)SPECI[i % (sizeof SPECI / sizeof SPECI[0])];
  }
}
static size_t nspecial(schedc_dtype t) {
  return t == SCHEDC_F32 ? sizeof SPEC32F / 4 : t == SCHEDC_F64 ? sizeof SPEC64F / 8 : t == SCHEDC_I32 ? 12
                                                                                  : sizeof SPECI / sizeof SPECI[0];
}

/* A small exact value (ties, equal magnitudes): the float of a small integer, or the integer. */
static uint64_t small(schedc_dtype t, uint64_t r) {
  int v = (int)(r % 17) - 8;
  if (t == SCHEDC_F32) { float f = (float)v / 2; uint32_t u; memcpy(&u, &f, 4); return u; }
  if (t == SCHEDC_F64) { double f = (double)v / 2; uint64_t u; memcpy(&u, &f, 8); return u; }
  return t == SCHEDC_I32 ? (uint32_t)(int32_t)v : (uint64_t)(int64_t)v;
}

static void put_elem(void *arr, size_t sz, size_t i, uint64_t bits) {
  if (sz == 4) { uint32_t u = (uint32_t)bits; memcpy((char *)arr + i * 4, &u, 4); }
  else memcpy((char *)arr + i * 8, &bits, 8);
}
static uint64_t get_elem(const void *arr, size_t sz, size_t i) {
  if (sz == 4) { uint32_t u; memcpy(&u, (const char *)arr + i * 4, 4); return u; }
  uint64_t u;
  memcpy(&u, (const char *)arr + i * 8, 8);
  return u;
}

static void fmt_val(schedc_dtype t, uint64_t bits, char *buf, size_t cap) {
  if (t == SCHEDC_F32) {
    float f; uint32_t u = (uint32_t)bits; memcpy(&f, &u, 4);
    snprintf(buf, cap, "%.9g (bits 0x%08x)", (double)f, u);
  } else if (t == SCHEDC_F64) {
    double f; memcpy(&f, &bits, 8);
    snprintf(buf, cap, "%.17g (bits 0x%016llx)", f, (unsigned long long)bits);
  } else if (t == SCHEDC_I32) snprintf(buf, cap, "%d", (int32_t)(uint32_t)bits);
  else snprintf(buf, cap, "%lld", (long long)(int64_t)bits);
}

/* op(a, b) == op(b, a) bit for bit on n pairs through the compiled code; *tested = pairs. */
static schedc_status commutes(opx *o, const char *path, const char *name, long n, long *tested) {
  schedc_dtype t = o->src.type;
  size_t sz = schedc_dtype_size(t), ns = nspecial(t);
  size_t N = (size_t)n > ns * ns ? (size_t)n : ns * ns;
  char *m = malloc(4 * N * sz);
  if (!m) return sc_err(SCHEDC_ENOMEM, "out of memory");
  char *A = m, *B = m + N * sz, *R1 = m + 2 * N * sz, *R2 = m + 3 * N * sz;
  uint64_t s = 0x9e3779b97f4a7c15ull;
  uint64_t signbit = sz == 4 ? 0x80000000u : 0x8000000000000000ull;
  size_t i = 0;
  for (size_t x = 0; x < ns; x++) /* every pair of specials */
    for (size_t y = 0; y < ns; y++, i++) {
      put_elem(A, sz, i, special(t, x));
      put_elem(B, sz, i, special(t, y));
    }
  for (; i < N; i++) {
    uint64_t r = rnd(&s), q = rnd(&s), a, b;
    switch (i % 5) {
    case 0: a = r; b = q; break;                                  /* random bits */
    case 1: a = special(t, r); b = q; break;                      /* a special against anything */
    case 2: a = r; b = a ^ signbit; break;                        /* equal magnitudes, opposite signs */
    case 3: a = small(t, r); b = small(t, q); break;              /* small exact values: ties */
    default: a = r; b = a ^ (q & 3); break;                       /* neighbours (an ulp or two) */
    }
    if (t == SCHEDC_I32) { a &= 0xffffffffu; b &= 0xffffffffu; }
    if (sz == 4) { a &= 0xffffffffu; b &= 0xffffffffu; }
    put_elem(A, sz, i, a);
    put_elem(B, sz, i, b);
  }
  o->so.pairs(A, B, R1, N);
  o->so.pairs(B, A, R2, N);
  schedc_status st = SCHEDC_OK;
  for (i = 0; i < N; i++)
    if (get_elem(R1, sz, i) != get_elem(R2, sz, i)) {
      char va[96], vb[96], r1[96], r2[96];
      fmt_val(t, get_elem(A, sz, i), va, sizeof va);
      fmt_val(t, get_elem(B, sz, i), vb, sizeof vb);
      fmt_val(t, get_elem(R1, sz, i), r1, sizeof r1);
      fmt_val(t, get_elem(R2, sz, i), r2, sizeof r2);
      st = sc_err(SCHEDC_EINVAL, "%s:%u:%u: '%s' is not commutative: %s(a, b) = %s but %s(b, a) = %s for a = %s, b = %s "
                  "(the proven trees combine two operands in either order, so an operator must give the same bits "
                  "both ways: make the formula symmetric, and break ties, e.g. of equal magnitudes, on both operands)",
                  path, o->src.line, o->src.col, name, name, r1, name, r2, va, vb);
      break;
    }
  *tested = st == SCHEDC_OK ? (long)N : (long)i;
  free(m);
  return st;
}

static void opx_free(opx *o) {
  if (!o) return;
  if (o->so.lib) dlclose(o->so.lib);
  sc_opsrc_free(&o->src);
  free(o);
}

schedc_status schedc_op_create(const char *path, const char *name, const schedc_op_opts *opts, schedc_op *out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "schedc_op_create: out is NULL");
  *out = SCHEDC_SUM;
  if (!path || !*path || !name || !*name)
    return sc_err(SCHEDC_EINVAL, "schedc_op_create: give the operator file's path and the function's name");
  if (opts && opts->size != sizeof *opts)
    return sc_err(SCHEDC_EINVAL, "schedc_op_create: opts->size is %zu, expected %zu (use SCHEDC_OP_OPTS_INIT)",
                  opts->size, sizeof *opts);
  long pairs = opts && opts->pairs ? opts->pairs : 131072;
  if (pairs < 100000) return sc_err(SCHEDC_EINVAL, "schedc_op_create: pairs %ld is below the minimum of 100000", pairs);
  opx *o = calloc(1, sizeof *o);
  if (!o) return sc_err(SCHEDC_ENOMEM, "out of memory");
  double t0 = now_s();
  schedc_status st = sc_ops_check(path, name, &o->src);
  double t1 = now_s();
  if (st == SCHEDC_OK) st = sc_ops_compile(o->src.cpu, &o->so);
  double t2 = now_s();
  long tested = 0;
  if (st == SCHEDC_OK) st = commutes(o, path, name, pairs, &tested);
  double t3 = now_s();
  if (st != SCHEDC_OK) { opx_free(o); return st; }
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  o->def.type = o->src.type;
  o->def.hash = sc_fnv(SC_FNV_INIT, o->src.cpu, strlen(o->src.cpu));
  snprintf(o->def.name, sizeof o->def.name, "%s:%s", base, name);
  o->def.chain = o->so.chain;
  o->def.cuda = o->src.cuda;
  schedc_op_info in = SCHEDC_OP_INFO_INIT;
  in.name = o->def.name;
  in.type = o->def.type;
  in.hash = o->def.hash;
  in.pairs_tested = tested;
  in.cache_hit = o->so.cache_hit;
  in.check_s = t1 - t0;
  in.compile_s = t2 - t1;
  in.test_s = t3 - t2;
  in.cuda_source = o->src.cuda;
  o->info = in;
  o->value = sc_opreg_add(&o->def);
  if (o->value < 0) {
    opx_free(o);
    return sc_err(SCHEDC_ENOMEM, "schedc_op_create: the process has made the most custom operators it can (4096)");
  }
  *out = (schedc_op)o->value;
  return SCHEDC_OK;
}

schedc_status schedc_op_get_info(schedc_op op, schedc_op_info *info) {
  const sc_opdef *d = sc_opreg_get((int)op);
  if (!d) return sc_err(SCHEDC_EINVAL, "schedc_op_get_info: %d is not a live custom operator", (int)op);
  if (!info || info->size != sizeof *info)
    return sc_err(SCHEDC_EINVAL, "schedc_op_get_info: info->size must be sizeof(schedc_op_info) (SCHEDC_OP_INFO_INIT)");
  *info = ((const opx *)(const void *)d)->info;
  return SCHEDC_OK;
}

void schedc_op_free(schedc_op op) {
  const sc_opdef *d = sc_opreg_get((int)op);
  if (!d) return;
  sc_opreg_remove((int)op);
  opx_free((opx *)(void *)(uintptr_t)d);
}
