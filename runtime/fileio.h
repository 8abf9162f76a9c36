/*
 * fileio.h — whole-file reads and atomic writes (temp name, fsync, rename: the file is either
 * complete or absent), shared by plan files and the kernel cache.
 */
#ifndef SC_FILEIO_H
#define SC_FILEIO_H

#include <stddef.h>

/* malloc'd contents plus a NUL (not counted in *len); NULL with errno set on failure. */
void *sc_read_file(const char *path, size_t *len);
/* 0, or -1 with errno set (no temp file is left behind). */
int sc_write_atomic(const char *path, const void *data, size_t len);

#endif
