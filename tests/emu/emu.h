/*
 * emu.h — what the two halves of the emulated-GPU test plugin (libschedc_emu.so: emu.c, the
 * device; emu_net.c, NCCL) share: their tables and the error helper that reports through the
 * library's host table (runtime/cuda/cuda_plugin.h). Internal to tests/emu/.
 */
#ifndef SC_EMU_H
#define SC_EMU_H

#include "cuda_plugin.h"

extern const sc_cudev sc_cudev_emu;
extern const sc_cunet sc_cunet_emu;

/* printf-style detail for schedc_errmsg(), set through the library's host->err; returns st. */
schedc_status sc_emu_err(schedc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
