/*
 * fileio.c — see fileio.h.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

int sc_open_regular(const char *path, unsigned long long max, unsigned long long *size, char *err, size_t cap) {
  if (!path || !*path) {
    snprintf(err, cap, "an empty path is not a file");
    errno = ENOENT;
    return -1;
  }
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    snprintf(err, cap, "cannot open %s: %s", path, strerror(e));
    errno = e;
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    snprintf(err, cap, "cannot stat %s: %s", path, strerror(e));
    close(fd);
    errno = e;
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, cap, "%s is %s, not a regular file", path, kind_of(st.st_mode));
    close(fd);
    errno = EINVAL;
    return -1;
  }
  if ((unsigned long long)st.st_size > max) {
    snprintf(err, cap, "%s is %llu bytes, more than the %llu this file may have", path,
             (unsigned long long)st.st_size, max);
    close(fd);
    errno = EFBIG;
    return -1;
  }
  /* blocking again: a regular file never blocks, and fdopen'ed readers expect ordinary reads */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *size = (unsigned long long)st.st_size;
  return fd;
}

void *sc_read_file(const char *path, size_t *len) {
  char why[512];
  unsigned long long size;
  int fd = sc_open_regular(path, (unsigned long long)1 << 34, &size, why, sizeof why);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "rb");
  if (!f) { int e = errno; close(fd); errno = e; return NULL; }
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

const char *sc_proc_stat_rest(const char *path, char *buf, size_t cap) {
  FILE *f = cap > 2 ? fopen(path, "r") : NULL;
  if (!f) return NULL;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *rp = strrchr(buf, ')'); /* "pid (comm) S ...": the last one closes the name */
  return rp && rp[1] == ' ' ? rp + 2 : NULL;
}

unsigned long long sc_proc_start(const char *path) {
  char buf[1024];
  const char *p = sc_proc_stat_rest(path, buf, sizeof buf); /* at field 3 */
  if (!p) return 0;
  int field = 3;
  for (; *p && field < 22; p++)
    if (*p == ' ') field++;
  return field == 22 ? strtoull(p, NULL, 10) : 0;
}
