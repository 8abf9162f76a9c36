/*
 * cpu_probe.c — the threads and shm rows of `schedc info` (backends.h's list): each backend is
 * built into every schedc, and usable here when a one-rank communicator of it can be made (shm:
 * its segments and memfds, the same calls a job makes), which is then freed at once.
 */
#include <stdio.h>

#include "backends.h"

static void probe(sc_probe *p, schedc_status st, schedc_comm *c) {
  p->built = 1;
  p->found = st == SCHEDC_OK;
  if (!p->found) snprintf(p->why, sizeof p->why, "%s", schedc_errmsg()[0] ? schedc_errmsg() : schedc_status_str(st));
  schedc_comm_free(c);
}

static schedc_comm_opts opts(void) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 10; /* one rank waits for nobody; a bound all the same */
  return o;
}

void sc_threads_probe(sc_probe *p) {
  schedc_comm_opts o = opts();
  schedc_comm *c = NULL;
  schedc_status st = schedc_comm_init_threads(1, &o, &c);
  probe(p, st, st == SCHEDC_OK ? c : NULL);
}

void sc_shm_probe(sc_probe *p) {
  schedc_comm_opts o = opts();
  schedc_comm *c = NULL;
  schedc_uid id;
  schedc_status st = schedc_unique_id(&id);
  if (st == SCHEDC_OK) st = schedc_comm_init_shm_uid(0, 1, &id, &o, &c);
  probe(p, st, st == SCHEDC_OK ? c : NULL);
}
