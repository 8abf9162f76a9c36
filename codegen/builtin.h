/*
 * builtin.h — schedules built in C, for communicators that are given no plan: the ring of
 * schedules/ring.lua (k = 1) for every collective. Verified like any other schedule.
 */
#ifndef SC_BUILTIN_H
#define SC_BUILTIN_H

#include "ir.h"

/* Fill ir (initialised here) with the ring for collective on n ranks. 0, or -1 (OOM/range). */
int sc_builtin_ring(sc_ir *ir, int collective, uint32_t n, uint32_t root);

#endif
