/*
 * fuzz_topo.c — libFuzzer target for the topology importer (schedc_topology_import: the strict
 * XML reader, NCCL topology XML, hwloc XML through hwloc's loader after our reader accepted it).
 * Every input must end in SCHEDC_OK with a topology whose three written forms are produced (and
 * whose topology file the cost model reads back), or a
 * clean error with a message and no topology — a crash, leak, sanitizer report or hang is a
 * finding. Seeds: tests/topo (the NCCL and hwloc fixtures).
 */
#define _GNU_SOURCE /* memfd_create */
#include <string.h>

#include "fuzz_input.h"
#include "schedc/schedc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = sc_fuzz_file(data, size, path, sizeof path);
  schedc_topology *t = NULL;
  schedc_status st = schedc_topology_import(path, &t);
  close(fd);
  if (st == SCHEDC_OK) {
    if (!t || schedc_topology_nranks(t) < 1) abort();
    for (int f = 0; f < 3; f++) {
      long n = schedc_topology_write(t, (schedc_topology_format)f, NULL, 0);
      if (n < 0) abort();
      char *buf = malloc((size_t)n + 1);
      if (!buf || schedc_topology_write(t, (schedc_topology_format)f, buf, (size_t)n + 1) != n || strlen(buf) != (size_t)n) abort();
      if (f == SCHEDC_TOPOLOGY_FILE) { /* what we write, we read: the cost model loads it */
        int fd2 = sc_fuzz_file((const uint8_t *)buf, (size_t)n, path, sizeof path);
        schedc_cost_model m = SCHEDC_COST_MODEL_INIT;
        if (schedc_cost_model_load(path, &m) != SCHEDC_OK) { fprintf(stderr, "%s\n", schedc_errmsg()); abort(); }
        close(fd2);
      }
      free(buf);
    }
    schedc_topology_free(t);
  } else if (t || !schedc_errmsg()[0]) {
    abort();
  }
  return 0;
}
