/*
 * fpenv.h — the floating-point environment every call computes in, whatever the calling thread
 * set: IEEE round to nearest, subnormals kept (no flush to zero, no denormals-are-zero, no
 * default-NaN or alternative half precision modes), every exception masked. The caller's own
 * environment is put back when the call returns. Why: FTZ/DAZ and the rounding mode are per
 * thread (torch.set_flush_denormal, fesetround), so a call's bits would depend on the thread
 * that made it (docs/determinism.md, "The calling thread's floating-point environment").
 */
#ifndef SC_FPENV_H
#define SC_FPENV_H

/* What sc_fpenv_enter changed, for sc_fpenv_leave; zero when the thread's environment was the
 * call's already (the usual case: one read of the control register, no write). */
typedef struct sc_fpenv {
  unsigned long long saved; /* the caller's control register (x86 MXCSR, AArch64 FPCR) or rounding mode */
  int changed;
} sc_fpenv;

void sc_fpenv_enter(sc_fpenv *e);
void sc_fpenv_leave(const sc_fpenv *e);

#endif
