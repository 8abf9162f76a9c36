/*
 * hosts.c — a process's host identity and a communicator's host layout. The id hashes the host
 * name with the kernel's boot id (two machines may share a name; a container shares its host's
 * kernel), or SCHEDC_HOST_ID; ranks compare ids, never names.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm.h"
#include "err.h"
#include "hash.h"
#include "hosts.h"
#include "params.h"

uint64_t sc_host_id(void) {
  char buf[512] = "";
  const char *e = sc_param_str(SC_P_SCHEDC_HOST_ID);
  if (e) {
    snprintf(buf, sizeof buf, "id:%s", e);
  } else {
    gethostname(buf, 255);
    buf[255] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    size_t l = strlen(buf);
    if (f && !fgets(buf + l, (int)(sizeof buf - l), f)) buf[l] = 0;
    if (f) fclose(f);
  }
  return sc_fnv_str(SC_FNV_INIT, buf); /* ranks only compare ids with each other */
}

uint64_t schedc_host_id(void) { return sc_host_id(); }

int sc_hosts_number(const uint64_t *ids, int n, uint32_t *node) {
  int hosts = 0;
  for (int r = 0; r < n; r++) {
    int q = 0;
    while (q < r && ids[q] != ids[r]) q++;
    uint32_t h = q < r ? (node ? node[q] : 0) : (uint32_t)hosts++;
    if (node) node[r] = h;
  }
  return hosts;
}

schedc_status sc_comm_set_hosts(schedc_comm *c, const uint64_t *ids) {
  int n = c->nranks;
  uint32_t *node = malloc((size_t)n * sizeof *node);
  int *host_of = malloc((size_t)n * sizeof *host_of);
  if (!node || !host_of) {
    free(node);
    free(host_of);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  int hosts = sc_hosts_number(ids, n, node), blocks = n % hosts == 0;
  /* equal consecutive blocks: rank r on host r / (n / hosts), hosts numbered as they appear */
  for (int r = 0; r < n && blocks; r++) blocks = node[r] == (uint32_t)(r / (n / hosts));
  for (int r = 0; r < n; r++) host_of[r] = (int)node[r];
  free(node);
  free(c->host_of);
  c->host_of = host_of;
  c->nhosts = hosts;
  c->host_blocks = blocks;
  return sc_tuning_check_hosts(&c->tuning, n, host_of);
}
