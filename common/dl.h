/*
 * dl.h — the libraries schedc uses without linking them (NVRTC, the CUDA driver, NCCL): the
 * first of a list of candidate names that dlopen loads, and a table of entry points resolved
 * from it, all or none; where a loaded library lives. Internal to the library.
 */
#ifndef SC_DL_H
#define SC_DL_H

#include <stddef.h>

typedef struct sc_dlsym { void **f; const char *name; } sc_dlsym;

/* The first of cands[0..n) that dlopen loads (NULL and empty names skipped), else NULL; the
 * names tried, comma-separated, into tried[cap]. */
void *sc_dl_first(const char *const *cands, size_t n, char *tried, size_t cap);
/* Resolve every syms[i] into *syms[i].f. NULL when all resolved, else the first missing name
 * (and the library is closed). */
const char *sc_dl_syms(void *lib, const sc_dlsym *syms, size_t n);
/* The file a dlopen handle was loaded from (the loader's path, after its search), or of the
 * object that holds the address addr (a linked library's function, or the program); into buf:
 * 1, or 0 with "" when unknown. For `schedc info` (sc_probe.path). */
int sc_dl_handle_path(void *lib, char *buf, size_t cap);
int sc_dl_addr_path(const void *addr, char *buf, size_t cap);

#endif
