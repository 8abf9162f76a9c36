/*
 * ref.h — the tests' independent reference: parses a proven tree ("((r0+r1)+r2)") and evaluates
 * it per element with its own implementation of the ops (sum, prod, min, max, avg), NaN/±0
 * rules and rounding (the compiler's _Float16 conversion; bf16 by comparing distances in
 * double). Nothing here calls the runtime's kernels.
 */
#ifndef SC_TEST_REF_H
#define SC_TEST_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schedc/schedc.h"

/* Postfix program: >= 0 pushes leaf rank, -1 combines the top two. */
typedef struct ref_expr { int *code; int n; } ref_expr;

static int ref_parse(const char *s, ref_expr *e) {
  size_t len = strlen(s);
  e->code = malloc((len + 1) * sizeof(int));
  e->n = 0;
  int ops = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == 'r') {
      int v = 0;
      while (i + 1 < len && s[i + 1] >= '0' && s[i + 1] <= '9') v = v * 10 + (s[++i] - '0');
      e->code[e->n++] = v;
    } else if (s[i] == ')') {
      e->code[e->n++] = -1;
      ops++;
    } else if (s[i] == '-') {
      e->n = 0; /* unspecified */
      return 0;
    }
  }
  return 1;
}

static float ref_qnanf(void) { uint32_t u = 0x7fc00000u; float f; memcpy(&f, &u, 4); return f; }
static double ref_qnan(void) { uint64_t u = 0x7ff8000000000000ull; double f; memcpy(&f, &u, 8); return f; }

static double ref_opd(schedc_op op, double a, double b, int is32) {
  double r;
  if (op == SCHEDC_MIN || op == SCHEDC_MAX) {
    if (isnan(a) || isnan(b)) return is32 ? (double)ref_qnanf() : ref_qnan();
    if (a == 0 && b == 0) { /* only ±0 compare equal yet differ: min prefers -0, max +0 */
      if (op == SCHEDC_MIN) return (signbit(a) || signbit(b)) ? -0.0 : 0.0;
      return (signbit(a) && signbit(b)) ? -0.0 : 0.0;
    }
    return op == SCHEDC_MIN ? (a < b ? a : b) : (a > b ? a : b);
  }
  if (is32) {
    float x = (float)a, y = (float)b;
    float z = op == SCHEDC_PROD ? x * y : x + y;
    r = z;
  } else {
    r = op == SCHEDC_PROD ? a * b : a + b;
  }
  if (isnan(r)) return is32 ? (double)ref_qnanf() : ref_qnan();
  return r;
}

static int64_t ref_opi(schedc_op op, int64_t a, int64_t b, int bits) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b, r;
  switch (op) {
  case SCHEDC_PROD: r = ua * ub; break;
  case SCHEDC_MIN: return a < b ? a : b;
  case SCHEDC_MAX: return a > b ? a : b;
  default: r = ua + ub; break;
  }
  if (bits == 32) return (int64_t)(int32_t)(uint32_t)r;
  return (int64_t)r;
}

/* Element i of rank r's input, as the accumulation value (f16/bf16 widened exactly). */
static double ref_in_f(schedc_dtype t, const void *buf, size_t i) {
  switch (t) {
  case SCHEDC_F32: return ((const float *)buf)[i];
  case SCHEDC_F64: return ((const double *)buf)[i];
  case SCHEDC_F16: { _Float16 h; memcpy(&h, (const char *)buf + 2 * i, 2); return (double)(float)h; }
  case SCHEDC_BF16: { uint32_t u = (uint32_t)((const uint16_t *)buf)[i] << 16; float f; memcpy(&f, &u, 4); return f; }
  default: return 0;
  }
}

static uint16_t ref_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return (uint16_t)((u >> 16) | 0x40);
  if (isinf(f)) return (uint16_t)(u >> 16);
  uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
  float flo, fhi;
  memcpy(&flo, &lo, 4);
  memcpy(&fhi, &hi, 4);
  double dl = fabs((double)f - (double)flo), dh = fabs((double)fhi - (double)f);
  if (isinf(fhi)) dh = fabs(copysign(ldexp(1.0, 128), (double)f) - (double)f); /* inf stands for ±2^128 when rounding */
  if (dl < dh || (dl == dh && !((lo >> 16) & 1))) return (uint16_t)(lo >> 16);
  return (uint16_t)(hi >> 16);
}

/* The tests' inputs: element i of buf (dtype t) from 64 random bits x — values of varied magnitude
 * (so association matters), with specials & 1 some ±0, & 2 some ±inf and NaN. */
static inline void ref_input(schedc_dtype t, void *buf, size_t i, uint64_t x, int specials) {
  double v = ((double)(x >> 11) / 9007199254740992.0 - 0.5) * (double)(1 << (x % 24));
  if ((specials & 1) && x % 97 == 0) v = (x & 1) ? -0.0 : 0.0;
  if ((specials & 2) && x % 211 == 0) v = (x & 2) ? INFINITY : -INFINITY;
  if ((specials & 2) && x % 401 == 0) v = NAN;
  switch (t) {
  case SCHEDC_F32: ((float *)buf)[i] = (float)v; break;
  case SCHEDC_F64: ((double *)buf)[i] = v; break;
  case SCHEDC_F16: { _Float16 h = (_Float16)(float)(v / 64); memcpy((char *)buf + 2 * i, &h, 2); break; }
  case SCHEDC_BF16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); ((uint16_t *)buf)[i] = (uint16_t)(u >> 16); break; }
  case SCHEDC_I32: ((int32_t *)buf)[i] = (int32_t)(x >> 40) - (1 << 23); break;
  case SCHEDC_I64: ((int64_t *)buf)[i] = (int64_t)(x >> 3) - (int64_t)(x >> 2); break;
  default: break;
  }
}

/* Evaluate the tree for element i into out (dtype bytes). inputs[r] are the ranks' buffers
 * (each `count` elements of dtype); avg divides by nranks. */
static void ref_eval(const ref_expr *e, schedc_dtype t, schedc_op op, int nranks, const void *const *inputs,
                     size_t i, void *out) {
  int isint = t == SCHEDC_I32 || t == SCHEDC_I64;
  double st[256];
  int64_t sti[256];
  int sp = 0, is32 = t != SCHEDC_F64;
  for (int k = 0; k < e->n; k++) {
    int c = e->code[k];
    if (c >= 0) {
      if (isint) sti[sp++] = t == SCHEDC_I32 ? ((const int32_t *)inputs[c])[i] : ((const int64_t *)inputs[c])[i];
      else st[sp++] = ref_in_f(t, inputs[c], i);
    } else {
      sp--;
      if (isint) sti[sp - 1] = ref_opi(op, sti[sp - 1], sti[sp], t == SCHEDC_I32 ? 32 : 64);
      else st[sp - 1] = ref_opd(op, st[sp - 1], st[sp], is32);
    }
  }
  if (isint) {
    int64_t v = sti[0];
    if (op == SCHEDC_AVG) v = v / nranks;
    if (t == SCHEDC_I32) { int32_t w = (int32_t)v; memcpy(out, &w, 4); }
    else memcpy(out, &v, 8);
    return;
  }
  double v = st[0];
  if (op == SCHEDC_AVG) v = is32 ? (double)((float)v / (float)nranks) : v / nranks;
  switch (t) {
  case SCHEDC_F32: { float f = (float)v; memcpy(out, &f, 4); break; }
  case SCHEDC_F64: memcpy(out, &v, 8); break;
  case SCHEDC_F16: { _Float16 h = (_Float16)(float)v; memcpy(out, &h, 2); break; }
  case SCHEDC_BF16: { uint16_t b = ref_bf16((float)v); memcpy(out, &b, 2); break; }
  default: break;
  }
}

#endif
