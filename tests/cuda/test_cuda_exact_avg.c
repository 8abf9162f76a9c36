/*
 * test_cuda_exact_avg.c — exact avg's device code (cuda_device.cuh's sc_xavg, through the
 * generated schedc_xout kernel) for any count of summands, against tests/exact_ref.h's exact
 * division: the backend reaches at most 64 ranks and no exact leaves on cuda, so its calls never
 * divide by more; here the kernel is launched directly on the emulated device (the plugin's table,
 * as the library launches it) with nterms up to 2^31 - 1, every format, and sums chosen where a
 * truncated quotient shows: |S| < n (all fraction), ties at the format's precision built as
 * n (2c + 1) 2^k, one above and below them, and random ones. Skips (77) without the emulated
 * device (SCHEDC_CUDA_PLUGIN). Usage: test_cuda_exact_avg
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "../exact_ref.h"
#include "cuda_abi.h"
#include "cuda_plugin.h"
#include "schedc/schedc.h"

static char g_err[1024];
static schedc_status host_err(schedc_status st, const char *msg) {
  snprintf(g_err, sizeof g_err, "%s", msg);
  return st;
}
static int host_cache(char *buf, size_t cap) { (void)buf; (void)cap; return 0; }

enum { N = 4096 };

/* N sums for divisor n, format f: what a truncated or double-rounded quotient gets wrong. */
static void sums(const fmt *f, uint64_t n, int64_t *s, uint64_t seed) {
  for (int i = 0; i < N; i++) {
    uint64_t h = mix(seed * 1000003 + (uint64_t)i);
    int neg = (int)(h & 1);
    unsigned __int128 a;
    switch (i % 6) {
    case 0: a = 1 + (h >> 8) % n; break;                          /* |S| <= n: the quotient all fraction */
    case 1: a = (h >> 1) >> (h >> 58); break;                     /* random magnitudes, 1..63 bits */
    case 2: case 3: case 4: {                                    /* a tie at p bits, and +-1 */
      uint64_t c = (1ull << (f->p - 1)) | ((h >> 8) & ((1ull << (f->p - 1)) - 1));
      a = (unsigned __int128)n * (2 * c + 1);
      int room = 62 - bitlen(a);
      if (room < 0) { a = h >> 2; break; }                        /* n too large for a tie below 2^63 */
      a <<= (h >> 40) % (unsigned)(room + 1);
      a += i % 6 == 3 ? 1 : 0;
      a -= i % 6 == 4 ? 1 : 0;
      break;
    }
    default: a = (h >> 2) % (4 * n + 1); break;                   /* a few units of n */
    }
    s[i] = neg ? -(int64_t)a : (int64_t)a;
  }
}

int main(void) {
  const char *so = getenv("SCHEDC_CUDA_PLUGIN");
  if (!so || !*so) {
    printf("[SKIP] the emulated device is not set (SCHEDC_CUDA_PLUGIN)\n");
    return SC_SKIP_CODE;
  }
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  sc_cuda_plugin_fn *entry = h ? (sc_cuda_plugin_fn *)dlsym(h, SC_CUDA_PLUGIN_SYMBOL) : NULL;
  sc_cuda_host host = {SC_CUDA_PLUGIN_VERSION, host_err, host_cache};
  sc_cuda_plugin pl = {0};
  CHECK(entry && entry(&host, &pl) == SCHEDC_OK && pl.dev);
  if (!pl.dev) return DONE();
  const sc_cudev *dv = pl.dev;
  int ndev = 0;
  CHECK(dv->init(&ndev) == SCHEDC_OK && ndev >= 1 && dv->select(0) == SCHEDC_OK);
  /* one exact source serves every format and both ops (the kernel's parameters choose) */
  schedc_plan *plan = NULL;
  char *src = NULL;
  CHECK(schedc_plan_builtin(SCHEDC_ALLREDUCE, 2, 0, &plan) == SCHEDC_OK);
  CHECK(schedc_cuda_source_v2(plan, -1, SCHEDC_F32, SCHEDC_AVG_EXACT, 0, &src) == SCHEDC_OK && src);
  void *mod = NULL, *fn = NULL, *din = NULL, *dout = NULL;
  int ok = src && dv->load(src, "sm_90", &mod) == SCHEDC_OK && dv->kernel(mod, SC_CUDA_ENTRY_XOUT, &fn) == SCHEDC_OK &&
           dv->alloc(N * 8, &din) == SCHEDC_OK && dv->alloc(N * 4, &dout) == SCHEDC_OK;
  if (!ok) fprintf(stderr, "emulated device: %s\n", g_err);
  CHECK(ok);
  const uint64_t ns[] = {1, 2, 3, 7, 64, 255, 256, 257, 300, 1000, 4099, 5000, 65537, 100000, 100003, 1000000,
                         (1u << 24) + 1, 2147483647u};
  const int fmts[] = {SC_CUDA_XFMT_F32, SC_CUDA_XFMT_F16, SC_CUDA_XFMT_BF16};
  const schedc_dtype dts[] = {SCHEDC_F32, SCHEDC_F16, SCHEDC_BF16};
  static int64_t s[N];
  static uint32_t got32[N];
  int cases = 0, bad = 0;
  long ties = 0;
  for (size_t ni = 0; ok && ni < sizeof ns / sizeof ns[0]; ni++)
    for (int d = 0; d < 3; d++)
      for (int gi = 0; gi < 2; gi++) {
        fmt f = fmt_of(dts[d]);
        /* the grid: results normal (g near 0) or, for the small one, subnormal in every format */
        int g = gi ? (d == 1 ? -70 : -200) : (int)(mix(ns[ni] + (uint64_t)d) % 40) - 50;
        sums(&f, ns[ni], s, ns[ni] * 7 + (uint64_t)(d * 2 + gi));
        uint64_t x[SC_CUDA_XARGS_WORDS] = {(uint64_t)(uintptr_t)din, (uint64_t)(uintptr_t)dout, N, (uint64_t)fmts[d],
                                           (uint64_t)(int64_t)g, ns[ni], 1, SC_CUDA_XSPECIAL_NONE};
        void *pr[] = {x};
        schedc_status st = dv->copy(din, s, sizeof s, NULL);
        if (st == SCHEDC_OK) st = dv->launch(fn, 4, 64, pr, 0, NULL);
        if (st == SCHEDC_OK) st = dv->sync(NULL);
        if (st == SCHEDC_OK) st = dv->copy(got32, dout, N * (size_t)f.bytes, NULL);
        if (st) { fprintf(stderr, "emulated device: %s\n", g_err); bad++; continue; }
        cases++;
        for (int i = 0; i < N; i++) {
          uint32_t want = ref_round(&f, s[i], g, ns[ni]), got = get(dts[d], got32, (size_t)i);
          ties += ref_off_tie(&f, s[i], g, ns[ni]) == 0;
          if (got != want && bad++ < 8)
            fprintf(stderr, "%s n=%llu g=%d S=%lld: got %08x, want %08x\n", schedc_dtype_name(dts[d]),
                    (unsigned long long)ns[ni], g, (long long)s[i], got, want);
        }
      }
  printf("exact avg on the emulated device: %d launches of %d sums, %d wrong, %ld exact ties\n", cases, N, bad, ties);
  CHECK(bad == 0 && cases == 18 * 3 * 2);
  CHECK(ties > 1000);
  if (din) dv->release(din);
  if (dout) dv->release(dout);
  schedc_free(src);
  schedc_plan_free(plan);
  return DONE();
}
