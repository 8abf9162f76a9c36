/*
 * nvrtc.h — NVRTC, loaded with dlopen (declaring only the entry points used), so the build
 * needs no CUDA SDK and a machine without CUDA runs everything else.
 */
#ifndef SC_NVRTC_H
#define SC_NVRTC_H

#include <stddef.h>

#include "schedc/schedc.h"

/* Compile (no caching here). *out malloc'd; on failure *log is a malloc'd NVRTC log or NULL. */
schedc_status sc_nvrtc_compile(const char *src, const char *const *opts, int nopts, int ptx, char **out,
                               size_t *len, char **log);
/* NVRTC version, or -1/-1 when it cannot be loaded (errmsg says why). */
schedc_status sc_nvrtc_version(int *major, int *minor);

#endif
