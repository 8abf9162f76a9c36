/*
 * cuda_net.h — transfers between nodes for the cuda communicator with a process per GPU: NCCL's
 * grouped point-to-point (cuda_nccl.c, libnccl loaded with dlopen) or its emulation for machines
 * without a GPU (cuda_emu_net.c). Only payloads move through it; every reduction stays in
 * schedc's kernels, so the order is the proven one whichever carries the bytes.
 */
#ifndef SC_CUDA_NET_H
#define SC_CUDA_NET_H

#include <stddef.h>

#include "schedc/schedc.h"

/* A communicator's rendezvous, made by one rank and given to all (NCCL's ncclUniqueId). */
typedef struct sc_netid { unsigned char b[128]; } sc_netid;

typedef struct sc_cunet {
  const char *name;
  /* Load the library; *version as NCCL's ncclGetVersion gives it. SCHEDC_EUNAVAIL naming what
   * was looked for. */
  schedc_status (*load)(int *version);
  /* A fresh rendezvous (called on one rank; the others get it through the host exchange). */
  schedc_status (*unique_id)(sc_netid *id);
  /* This rank's communicator of nranks (the device is current); blocks until every rank has
   * called it. timeout_s bounds the emulation's waits. */
  schedc_status (*init)(const sc_netid *id, int nranks, int rank, double timeout_s, void **comm);
  /* One group of transfers: between start and end, sends and receives of bytes, enqueued on
   * stream at end (in stream order with the kernels), matched in order per pair of ranks. Every
   * rank's group holds all its operations of a boundary, so pairwise sends cannot deadlock. */
  schedc_status (*group_start)(void);
  schedc_status (*send)(void *comm, const void *buf, size_t bytes, int peer, void *stream);
  schedc_status (*recv)(void *comm, void *buf, size_t bytes, int peer, void *stream);
  schedc_status (*group_end)(void);
  /* SCHEDC_OK, or the failure the library met asynchronously (a peer gone, the network). */
  schedc_status (*health)(void *comm);
  /* abort: the peers may be gone, do not wait for them. */
  void (*destroy)(void *comm, int abort);
} sc_cunet;

extern const sc_cunet sc_cunet_nccl;
extern const sc_cunet sc_cunet_emu;

/* The table in use: the emulation when SCHEDC_CUDA_EMULATE=1, else NCCL; NULL (SCHEDC_EINVAL's
 * message set) when SCHEDC_CUDA_EMULATE is malformed. */
const sc_cunet *sc_cunet_get(void);

#endif
