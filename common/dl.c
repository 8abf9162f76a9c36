/*
 * dl.c — dlopen from a list of candidates and all-or-none symbol tables (dl.h), shared by the
 * loaders of NVRTC (nvrtc.c), the CUDA driver (cuda_driver.c), NCCL (cuda_nccl.c) and libclang
 * (opclang.c); and where a loaded library lives, for `schedc info` (runtime/info.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
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

int sc_dl_handle_path(void *lib, char *buf, size_t cap) {
  struct link_map *m = NULL;
  if (cap) buf[0] = 0;
  if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &m) != 0 || !m || !m->l_name || !*m->l_name) return 0;
  snprintf(buf, cap, "%s", m->l_name);
  return 1;
}

int sc_dl_addr_path(const void *addr, char *buf, size_t cap) {
  Dl_info di;
  if (cap) buf[0] = 0;
  if (!addr || !dladdr(addr, &di) || !di.dli_fname || !*di.dli_fname) return 0;
  snprintf(buf, cap, "%s", di.dli_fname);
  return 1;
}
