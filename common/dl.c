/*
 * dl.c — dlopen from a list of candidates and all-or-none symbol tables (dl.h), shared by the
 * loaders of NVRTC (nvrtc.c), the CUDA driver (cuda_driver.c) and NCCL (cuda_nccl.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#include "dl.h"

void *sc_dl_first(const char *const *cands, size_t n, char *tried, size_t cap) {
  size_t w = 0;
  void *lib = NULL;
  if (cap) tried[0] = 0;
  for (size_t i = 0; i < n && !lib; i++) {
    if (!cands[i] || !*cands[i]) continue;
    lib = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
    w += (size_t)snprintf(tried + w, w < cap ? cap - w : 0, "%s%s", w ? ", " : "", cands[i]);
  }
  return lib;
}

const char *sc_dl_syms(void *lib, const sc_dlsym *syms, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!(*syms[i].f = dlsym(lib, syms[i].name))) {
      dlclose(lib);
      return syms[i].name;
    }
  return NULL;
}
