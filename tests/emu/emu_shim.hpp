/*
 * emu_shim.hpp — what the generated CUDA source needs to compile and run on the host (emu.c,
 * the emulated-GPU test plugin): CUDA's qualifiers, built-in indices, atomics, fences and __syncthreads. A block
 * is an OS thread; its threads are coroutines (ucontext) switched at __syncthreads, so
 * __shared__ (a thread_local static) is per block. Included twice: first before the generated
 * code, then with SC_EMU_TAIL defined after it, for the launch entry points (which need sc_args).
 */
#ifndef SC_EMU_TAIL
/* The math functions a custom operator may call (docs/ops.md; the list is ops/opcheck.c's math_ok:
 * fabs, fmin, fmax, copysign, sqrt, fma, floor, ceil, trunc, rint and their f forms) are built
 * into NVRTC; on the host they are libm's, which rounds them correctly, as the device does
 * (compiled with -ffp-contract=off). Declared here rather than through <math.h>: in C++ that
 * header is libstdc++'s <cmath>, 570 KB preprocessed, and parsing it was half of every unit's
 * compile time (0.14 s -> 0.07 s per unit, measured). CUDA also gives each double form a float
 * overload (fma(float, float, float) is fmaf: sm_90 PTX fma.rn.f32); so does the shim, so the
 * emulated device resolves a call as the real one does. */
#define SC_EMU_MATH(X) X(fabs, (T a), (a)) X(fmin, (T a, T b), (a, b)) X(fmax, (T a, T b), (a, b)) \
  X(copysign, (T a, T b), (a, b)) X(sqrt, (T a), (a)) X(fma, (T a, T b, T c), (a, b, c)) X(floor, (T a), (a)) \
  X(ceil, (T a), (a)) X(trunc, (T a), (a)) X(rint, (T a), (a))
#define SC_EMU_DECLARE(name, params, args) extern "C" T name params noexcept;
#define SC_EMU_DECLARE_F(name, params, args) extern "C" T name##f params noexcept; \
  static inline T name params { return name##f args; }
#define T double
SC_EMU_MATH(SC_EMU_DECLARE)
#undef T
#define T float
SC_EMU_MATH(SC_EMU_DECLARE_F)
#undef T
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static thread_local

struct sc_emu_dim { unsigned x, y, z; };
static thread_local sc_emu_dim threadIdx, blockIdx, blockDim, gridDim;

/* The block being run on this OS thread: its coroutines and which one runs. */
struct sc_emu_block {
  ucontext_t sched;
  ucontext_t *ctx;
  char **stack;
  int *done;
  unsigned n, cur;
  void (*body)(void *);
  void *arg;
};
static thread_local sc_emu_block *sc_emu_cur;

/* A barrier: hand control back to the block's scheduler, which runs every other thread up to
 * the same barrier before resuming this one. */
static inline void __syncthreads(void) {
  sc_emu_block *b = sc_emu_cur;
  if (b->n > 1) swapcontext(&b->ctx[b->cur], &b->sched);
}
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/* A spinning thread 0 reads the clock on every turn: yield there, so other blocks (OS threads)
 * progress on few cores. 1 tick = 1 ns. */
static inline long long clock64(void) {
  sched_yield();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static inline void __nanosleep(unsigned ns) { (void)ns; } /* clock64 yields already */
static inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned val) {
  __atomic_compare_exchange_n(p, &cmp, val, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return cmp;
}
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned long long atomicExch(unsigned long long *p, unsigned long long v) {
  return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned atomicMax(unsigned *p, unsigned v) {
  unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
static inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, 4); return f; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, 4); return i; }
static inline double __longlong_as_double(long long i) { double f; memcpy(&f, &i, 8); return f; }
static inline long long __double_as_longlong(double f) { long long i; memcpy(&i, &f, 8); return i; }

#else /* SC_EMU_TAIL: launching */

static void sc_emu_entry(void) {
  sc_emu_block *b = sc_emu_cur;
  b->body(b->arg);
  b->done[b->cur] = 1; /* then back to the scheduler through uc_link */
}

/* Run one block: its threads round-robin, each up to its next __syncthreads or its end. */
static void sc_emu_run_block(unsigned nthreads, void (*body)(void *), void *arg) {
  sc_emu_block b;
  memset(&b, 0, sizeof b);
  b.n = nthreads;
  b.body = body;
  b.arg = arg;
  sc_emu_cur = &b;
  if (nthreads == 1) {
    threadIdx.x = 0;
    body(arg);
    return;
  }
  const size_t stack = 256 << 10;
  b.ctx = (ucontext_t *)calloc(nthreads, sizeof *b.ctx);
  b.stack = (char **)calloc(nthreads, sizeof *b.stack);
  b.done = (int *)calloc(nthreads, sizeof *b.done);
  for (unsigned t = 0; t < nthreads; t++) {
    b.stack[t] = (char *)malloc(stack);
    getcontext(&b.ctx[t]);
    b.ctx[t].uc_stack.ss_sp = b.stack[t];
    b.ctx[t].uc_stack.ss_size = stack;
    b.ctx[t].uc_link = &b.sched;
    makecontext(&b.ctx[t], sc_emu_entry, 0);
  }
  for (unsigned left = nthreads; left;) {
    left = 0;
    for (unsigned t = 0; t < nthreads; t++) {
      if (b.done[t]) continue;
      b.cur = t;
      threadIdx.x = t;
      swapcontext(&b.sched, &b.ctx[t]);
      left += !b.done[t];
    }
  }
  for (unsigned t = 0; t < nthreads; t++) free(b.stack[t]);
  free(b.ctx);
  free(b.stack);
  free(b.done);
}

/* One launch: the kernel, its arguments (copied, as the driver does), a thread per block. */
struct sc_emu_launch {
  char kind;   /* 'r': (sc_args), 'A': (sc_args, first, count), 'w': widen, 'n': narrow, 'a': avg,
                * 'x': exact mode's and a wire's kernels (sc_xargs: only in such a source) */
  void *fn;
  unsigned grid, block;
  sc_args args;
  const void *in;
  void *out;
  sc_u64 n;
  int nranks, first, count;
#ifdef SC_XARGS
  sc_xargs xa;
#endif
  pthread_t *th;
  struct sc_emu_blockarg { sc_emu_launch *l; unsigned idx; } *ba;
};

static void sc_emu_body(void *p) {
  sc_emu_launch *l = (sc_emu_launch *)p;
  switch (l->kind) {
  case 'r': ((void (*)(sc_args))l->fn)(l->args); break;
  case 'A': ((void (*)(sc_args, int, int))l->fn)(l->args, l->first, l->count); break;
  case 'w': ((void (*)(const unsigned short *, float *, sc_u64))l->fn)((const unsigned short *)l->in, (float *)l->out, l->n); break;
  case 'n': ((void (*)(const float *, unsigned short *, sc_u64))l->fn)((const float *)l->in, (unsigned short *)l->out, l->n); break;
  case 'a': ((void (*)(sc_acc *, sc_u64, int))l->fn)((sc_acc *)l->out, l->n, l->nranks); break;
#ifdef SC_XARGS
  case 'x': ((void (*)(sc_xargs))l->fn)(l->xa); break;
#endif
  }
}

static void *sc_emu_block_main(void *p) {
  sc_emu_launch::sc_emu_blockarg *a = (sc_emu_launch::sc_emu_blockarg *)p;
  blockIdx.x = a->idx;
  gridDim.x = a->l->grid;
  blockDim.x = a->l->block;
  gridDim.y = gridDim.z = blockDim.y = blockDim.z = 1;
  blockIdx.y = blockIdx.z = threadIdx.y = threadIdx.z = 0;
  sc_emu_run_block(a->l->block, sc_emu_body, a->l);
  return 0;
}

/* Start `name` (fn from dlsym) with CUDA-style params; returns a handle for sc_emu_wait, or
 * NULL (unknown kernel, no threads). */
extern "C" void *sc_emu_start(void *fn, const char *name, unsigned grid, unsigned block, void **params) {
  sc_emu_launch *l = (sc_emu_launch *)calloc(1, sizeof *l);
  if (!l) return 0;
  l->fn = fn;
  l->grid = grid;
  l->block = block;
  if (!strncmp(name, "schedc_rank", 11)) {
    l->kind = 'r';
    memcpy(&l->args, params[0], sizeof l->args);
  } else if (!strcmp(name, "schedc_all")) {
    l->kind = 'A';
    memcpy(&l->args, params[0], sizeof l->args);
    l->first = *(int *)params[1];
    l->count = *(int *)params[2];
  } else if (!strcmp(name, "schedc_widen") || !strcmp(name, "schedc_narrow")) {
    l->kind = name[7];
    l->in = *(const void **)params[0];
    l->out = *(void **)params[1];
    l->n = *(sc_u64 *)params[2];
  } else if (!strcmp(name, "schedc_avg")) {
    l->kind = 'a';
    l->out = *(void **)params[0];
    l->n = *(sc_u64 *)params[1];
    l->nranks = *(int *)params[2];
#ifdef SC_XARGS
  } else if (!strcmp(name, "schedc_xstats") || !strcmp(name, "schedc_xin") || !strcmp(name, "schedc_xout") ||
             !strcmp(name, "schedc_qstats") || !strcmp(name, "schedc_qin") || !strcmp(name, "schedc_qout")) {
    l->kind = 'x';
    memcpy(&l->xa, params[0], sizeof l->xa);
#endif
  } else {
    free(l);
    return 0;
  }
  l->th = (pthread_t *)calloc(grid, sizeof *l->th);
  l->ba = (sc_emu_launch::sc_emu_blockarg *)calloc(grid, sizeof *l->ba);
  for (unsigned i = 0; i < grid; i++) {
    l->ba[i].l = l;
    l->ba[i].idx = i;
    if (pthread_create(&l->th[i], 0, sc_emu_block_main, &l->ba[i])) {
      /* no thread: run the block here (a wait on a later block then ends by its time budget) */
      sc_emu_block_main(&l->ba[i]);
      l->th[i] = pthread_self();
    }
  }
  return l;
}

extern "C" void sc_emu_wait(void *h) {
  sc_emu_launch *l = (sc_emu_launch *)h;
  for (unsigned i = 0; i < l->grid; i++)
    if (!pthread_equal(l->th[i], pthread_self())) pthread_join(l->th[i], 0);
  free(l->th);
  free(l->ba);
  free(l);
}
#endif
