/*
 * fileio.h — whole-file reads and atomic writes (temp name, fsync, rename: the file is either
 * complete or absent), shared by plan files and the kernel caches; the cache directory.
 */
#ifndef SC_FILEIO_H
#define SC_FILEIO_H

#include <stddef.h>

/* malloc'd contents plus a NUL (not counted in *len); NULL with errno set on failure. */
void *sc_read_file(const char *path, size_t *len);
/* 0, or -1 with errno set (no temp file is left behind). */
int sc_write_atomic(const char *path, const void *data, size_t len);

/* The kernel cache directory (SCHEDC_CACHE_DIR, else $XDG_CACHE_HOME/schedc, else
 * ~/.cache/schedc), created if missing, into buf: 1; 0 when caching is off (SCHEDC_CACHE_DIR=off)
 * or there is no home. */
int sc_cache_dir(char *buf, size_t cap); /* cachedir.c */

#endif
