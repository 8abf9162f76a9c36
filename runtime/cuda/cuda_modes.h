/*
 * cuda_modes.h — the top of the cuda backend: its two modes, each its own operation table
 * (sc_backend, core/comm.h) over the phase loop (cuda_phase.h). One process driving every rank
 * (cuda_comm.c: schedc_comm_init_cuda) and a process per GPU (cuda_proc.c:
 * schedc_comm_init_cuda_rank, _over, and schedc_comm_init_env's cuda under MPI). The public calls
 * on any cuda communicator (cuda_stream.c) tell a cuda communicator by these tables.
 */
#ifndef SC_CUDA_MODES_H
#define SC_CUDA_MODES_H

#include "comm.h"

extern const sc_backend sc_cu_backend_one;  /* one process driving every rank */
extern const sc_backend sc_cu_backend_proc; /* a process per GPU */

#endif
