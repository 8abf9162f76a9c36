/*
 * fileio.h — whole-file reads and atomic writes (temp name, fsync, rename: the file is either
 * complete or absent), shared by plan files and the kernel caches; the cache directory; a /proc
 * stat line's fields.
 */
#ifndef SC_FILEIO_H
#define SC_FILEIO_H

#include <stddef.h>

/* Opens path for reading only if it is a regular file of at most max bytes: opened with
 * O_NONBLOCK (so a FIFO cannot block the open), then fstat'ed before anything is read (a FIFO,
 * device or directory is refused, a /dev/zero never read). The descriptor (blocking again,
 * close-on-exec) and its size in *size; -1 with "PATH: why" in err (errno set) otherwise. */
int sc_open_regular(const char *path, unsigned long long max, unsigned long long *size, char *err, size_t cap);

/* malloc'd contents plus a NUL (not counted in *len) of a regular file of at most 16 GiB;
 * NULL with errno set on failure (EINVAL: not a regular file; EFBIG: too large). */
void *sc_read_file(const char *path, size_t *len);
/* 0, or -1 with errno set (no temp file is left behind). */
int sc_write_atomic(const char *path, const void *data, size_t len);

/* A /proc stat line (/proc/PID/stat, /proc/self/task/TID/stat) read into buf (cap bytes): the text
 * after the ") " that closes the command name (which may hold spaces and parentheses), so that
 * field 3, the state, comes first; NULL when the file cannot be read or has no name. */
const char *sc_proc_stat_rest(const char *path, char *buf, size_t cap);
/* The start time (clock ticks after boot, field 22) of the process or thread of a /proc stat file:
 * with its pid it names one process for good (a pid is reused, a start time with it is not); 0
 * when the file cannot be read (it ended). */
unsigned long long sc_proc_start(const char *path);

/* The kernel cache directory (SCHEDC_CACHE_DIR, else $XDG_CACHE_HOME/schedc, else
 * ~/.cache/schedc), created if missing, into buf: 1; 0 when caching is off (SCHEDC_CACHE_DIR=off)
 * or there is no home. */
int sc_cache_dir(char *buf, size_t cap); /* cachedir.c */

#endif
