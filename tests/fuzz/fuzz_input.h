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

#endif
