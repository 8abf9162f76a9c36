/*
 * fileio.c — see fileio.h.
 */
#include "fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void *sc_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
    n += k;
    if (n == cap) {
      char *nb = cap > ((size_t)1 << 34) ? NULL : realloc(buf, cap * 2 + 1);
      if (!nb) { free(buf); buf = NULL; errno = ENOMEM; break; }
      buf = nb;
      cap *= 2;
    }
  }
  int rerr = ferror(f);
  fclose(f);
  if (buf && rerr) { free(buf); buf = NULL; errno = EIO; }
  if (buf) { buf[n] = 0; *len = n; }
  return buf;
}

int sc_write_atomic(const char *path, const void *data, size_t len) {
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 32);
  if (!tmp) { errno = ENOMEM; return -1; }
  snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "wb");
  int rc = -1;
  if (f) {
    int bad = fwrite(data, 1, len, f) != len;
    bad |= fflush(f) != 0;
    bad |= fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (!bad && rename(tmp, path) == 0) rc = 0;
    else { int e = errno; remove(tmp); errno = e; }
  }
  free(tmp);
  return rc;
}
