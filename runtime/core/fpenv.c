/*
 * fpenv.c — the call's floating-point environment (fpenv.h), set on the calling thread at the
 * library's entry and put back at its exit. x86: MXCSR (SSE does all of the library's float
 * arithmetic; the x87 unit is not used); AArch64: FPCR; elsewhere only the rounding mode (fenv.h).
 */
#include "fpenv.h"

#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2__))
#include <xmmintrin.h>

/* MXCSR: bits 0-5 exception flags (sticky: kept as they are), 6 DAZ, 7-12 exception masks,
 * 13-14 rounding control, 15 FTZ. The call's: every mask set, round to nearest, DAZ and FTZ off. */
#define MXCSR_FLAGS 0x3Fu
#define MXCSR_CALL 0x1F80u

void sc_fpenv_enter(sc_fpenv *e) {
  unsigned m = _mm_getcsr();
  unsigned want = MXCSR_CALL | (m & MXCSR_FLAGS);
  e->changed = m != want;
  e->saved = m;
  if (e->changed) _mm_setcsr(want);
}

void sc_fpenv_leave(const sc_fpenv *e) {
  if (e->changed) _mm_setcsr((unsigned)e->saved | (_mm_getcsr() & MXCSR_FLAGS)); /* the flags the call raised stay */
}

#elif defined(__aarch64__)
#include <stdint.h>

/* FPCR: FIZ (0), AH (1), NEP (2) of FEAT_AFP; trap enables IOE..IXE (8-12), IDE (15); FZ16 (19);
 * RMode (22-23); FZ (24); DN (25, default NaN: NaN payloads); AHP (26, f16 format). All zero for a call. */
#define FPCR_CALL_CLEAR ((uint64_t)0x7 | (uint64_t)0x1F << 8 | (uint64_t)1 << 15 | (uint64_t)1 << 19 | \
                         (uint64_t)3 << 22 | (uint64_t)7 << 24)

void sc_fpenv_enter(sc_fpenv *e) {
  uint64_t r;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(r));
  e->saved = r;
  e->changed = (r & FPCR_CALL_CLEAR) != 0;
  if (e->changed) {
    uint64_t w = r & ~FPCR_CALL_CLEAR;
    __asm__ __volatile__("msr fpcr, %0" : : "r"(w));
  }
}

void sc_fpenv_leave(const sc_fpenv *e) {
  if (e->changed) {
    uint64_t r = e->saved;
    __asm__ __volatile__("msr fpcr, %0" : : "r"(r));
  }
}

#else
#include <fenv.h>

void sc_fpenv_enter(sc_fpenv *e) {
  int r = fegetround();
  e->saved = (unsigned long long)(r < 0 ? 0 : r);
  e->changed = r != FE_TONEAREST && r >= 0;
  if (e->changed) fesetround(FE_TONEAREST);
}

void sc_fpenv_leave(const sc_fpenv *e) {
  if (e->changed) fesetround((int)e->saved);
}
#endif
