/*
 * msgrun.h — the message executor (msgrun.c): one call's plan run step by step over messages, for
 * the backends whose ranks may be on other hosts (mpi, net). Per step a rank posts a receive for
 * every transfer into it (into a temp) and a send for every transfer out of it (from its cells,
 * which hold the values before the step), completes them all, then applies its writes in plan
 * order, fused per cell: the step semantics, literally, so the bits are the proven order's. The
 * backend supplies the transport as a port; the executor owns the order.
 */
#ifndef SC_MSGRUN_H
#define SC_MSGRUN_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"

/* What a message carries: a transfer's payload, or (checksum mode) its sender's CRC32C. */
enum { SC_MSG_DATA = 0, SC_MSG_CRC = 1 };

/* A message transport. Posts are matched in order per (peer, step, kind): the k-th send of a
 * kind from a rank to another in a step meets the k-th receive of that kind posted for it. */
typedef struct sc_msgport {
  const char *name;          /* for messages ("the MPI transport") */
  size_t max_msg;            /* the largest payload one message carries (bytes) */
  /* Post a receive of `bytes` from rank src into buf, or a send of `bytes` to rank dst. On
   * failure the status with errmsg set (nothing is left posted that complete() would not end). */
  schedc_status (*recv)(schedc_comm *c, int src, uint32_t step, int kind, void *buf, size_t bytes);
  schedc_status (*send)(schedc_comm *c, int dst, uint32_t step, int kind, const void *buf, size_t bytes);
  /* Complete every operation posted since the last complete(), by `deadline` (sc_now seconds);
   * SCHEDC_ETIMEOUT / SCHEDC_EPEER naming the call, the step, this rank and the rank awaited. On
   * failure nothing stays posted. */
  schedc_status (*complete)(schedc_comm *c, const char *coll, uint32_t step, double deadline);
  /* Every rank's `bytes` of `mine` into all[r * bytes] (the agreement, the repair's vote): `what`
   * names it for messages ("allreduce's agreement"). */
  schedc_status (*allgather)(schedc_comm *c, const char *what, const void *mine, void *all, size_t bytes);
} sc_msgport;

/* The executor's scratch, kept by the backend between calls (grown, never shrunk). */
typedef struct sc_msgbufs {
  void *temp; size_t temp_cap;  /* the payloads received in a step */
  uint32_t *crc; size_t crc_cap; /* checksum mode: [2 * transfers of a step] sent and received CRCs */
  void *flip; size_t flip_cap;  /* flip injection: the corrupted copy that is sent */
} sc_msgbufs;
void sc_msgbufs_free(sc_msgbufs *b);

/* A backend's collective over a port: the ranks' agreement compared (core/agree.h), the plan run
 * over private scratch from this rank's inputs, again up to twice when checksum repair found a
 * corrupted transfer on some rank, then the result copied out. On failure the communicator is
 * broken (c->broken). */
schedc_status sc_msg_collective(schedc_comm *c, const sc_call *k, sc_result *res, const sc_msgport *port, sc_msgbufs *b);

#endif
