/*
 * fuzz_input.h — hands a fuzzer's bytes to schedc's path-based loaders: a memfd (no file left
 * behind, nothing on disk), named by its /proc/self/fd path. Header-only: each fuzz target is one
 * translation unit.
 */
#ifndef SC_FUZZ_INPUT_H
#define SC_FUZZ_INPUT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "schedc/schedc.h"

/* A memfd holding data[0..n), its path in path[cap]; the descriptor (close it), or -1 (aborts:
 * a fuzzer that cannot make its input has found nothing). */
static int sc_fuzz_file(const uint8_t *data, size_t n, char *path, size_t cap) {
  int fd = memfd_create("schedc-fuzz", MFD_CLOEXEC);
  if (fd < 0) { perror("memfd_create"); abort(); }
  for (size_t off = 0; off < n;) {
    ssize_t k = write(fd, data + off, n - off);
    if (k <= 0) { perror("write"); abort(); }
    off += (size_t)k;
  }
  snprintf(path, cap, "/proc/self/fd/%d", fd);
  return fd;
}

/* A plan loader's contract, whatever the input: SCHEDC_OK with a plan (freed here), or a failure
 * with no plan and a message. A breach aborts: the fuzzer reports it with its input. */
static inline void sc_fuzz_plan_result(schedc_status st, schedc_plan *plan) {
  if (st == SCHEDC_OK) {
    if (!plan) abort();
    schedc_plan_free(plan);
  } else if (plan || !*schedc_errmsg()) {
    abort();
  }
}

#endif
