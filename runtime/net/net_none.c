/*
 * net_none.c — the `net` entry points in builds without UCX (built instead of runtime/net/'s
 * files): they say so.
 */
#include <stdio.h>
#include <string.h>

#include "backends.h"
#include "err.h"

#define NO_UCX "this build of schedc has no net backend (install libucx-dev and rebuild)"

int sc_net_built(void) { return 0; }

schedc_status schedc_uid_net(schedc_uid *id) {
  if (id) memset(id, 0, sizeof *id);
  return sc_err(SCHEDC_EUNAVAIL, NO_UCX);
}

schedc_status schedc_comm_init_net(int rank, int nranks, const schedc_uid *id, const schedc_comm_opts *opts,
                                   schedc_comm **out) {
  (void)rank; (void)nranks; (void)id; (void)opts;
  if (out) *out = NULL;
  return sc_err(SCHEDC_EUNAVAIL, NO_UCX);
}

schedc_status schedc_comm_init_net_oob(int rank, int nranks, schedc_oob_allgather allgather, void *ctx,
                                       const schedc_comm_opts *opts, schedc_comm **out) {
  (void)rank; (void)nranks; (void)allgather; (void)ctx; (void)opts;
  if (out) *out = NULL;
  return sc_err(SCHEDC_EUNAVAIL, NO_UCX);
}

schedc_status sc_net_init_env(int rank, int nranks, const schedc_comm_opts *opts, schedc_comm **out) {
  (void)rank; (void)nranks; (void)opts;
  *out = NULL;
  return sc_err(SCHEDC_EUNAVAIL, NO_UCX);
}

void sc_net_backend_probe(sc_probe *p) { snprintf(p->why, sizeof p->why, "%s", NO_UCX); }
void sc_ucx_probe(sc_probe *p) { snprintf(p->why, sizeof p->why, "%s", NO_UCX); }
