/*
 * hosts.h — which host each rank of a communicator runs on (hosts.c). A backend whose ranks may
 * span hosts exchanges sc_host_id() at init and records the layout in the head
 * (sc_comm_set_hosts), so calls without a plan get a hierarchical one by themselves
 * (dispatch.c). Ranks of one process, or of one shared-memory job, are on one host.
 */
#ifndef SC_HOSTS_H
#define SC_HOSTS_H

#include <stdint.h>

#include "schedc/schedc.h"

/* This process's host as a 64-bit id: SCHEDC_HOST_ID when set (containers that share a host
 * name, tests that pretend to be several hosts), else the host name and the kernel's boot id. */
uint64_t sc_host_id(void);
/* Number the hosts of ids[n] in order of first appearance into node[n] (NULL: not wanted);
 * returns how many there are. */
int sc_hosts_number(const uint64_t *ids, int n, uint32_t *node);
/* Record on c (every rank of it passes the same ids[nranks]) how many hosts its ranks are on,
 * each rank's host (c->host_of, numbered as they first appear) and whether they hold equal
 * consecutive blocks of ranks (the layout `nnodes` alone describes to a schedule). SCHEDC_ENOMEM. */
schedc_status sc_comm_set_hosts(schedc_comm *c, const uint64_t *ids);

#endif
