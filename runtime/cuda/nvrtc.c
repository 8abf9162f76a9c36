/*
 * nvrtc.c — dlopen'ed NVRTC (see nvrtc.h). The entry points are declared in dl_abi.h with the
 * types of NVRTC's public ABI (opaque handles, int status). The driver is in cuda_driver.c.
 */
#define _GNU_SOURCE
#include "nvrtc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "dl.h"
#include "dl_abi.h"
#include "err.h"
#include "params.h"

static struct {
  void *lib;
  int lacks;       /* found, but without an entry point schedc uses: where says which */
  char where[1024];
  SC_ABI_NVRTC(SC_ABI_FIELD)
} N;
static pthread_once_t n_once = PTHREAD_ONCE_INIT;

static void load(void) {
  const char *env = sc_param_str(SC_P_SCHEDC_NVRTC), *home = sc_param_str(SC_P_CUDA_HOME);
  char homelib[512] = "";
  if (home) snprintf(homelib, sizeof homelib, "%s/lib64/libnvrtc.so", home);
  const char *cands[] = {env, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", homelib[0] ? homelib : NULL,
                         "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13"};
  if (!(N.lib = sc_dl_first(cands, sizeof cands / sizeof cands[0], N.where, sizeof N.where))) return;
  sc_dlsym syms[] = {
#define SYM(f, sym, res, params) SC_ABI_SYM(N, f, sym)
      SC_ABI_NVRTC(SYM)
#undef SYM
  };
  const char *missing = sc_dl_syms(N.lib, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    N.lib = NULL;
    N.lacks = 1;
    snprintf(N.where, sizeof N.where, "NVRTC found but lacks %s, which schedc uses", missing);
  }
}

static schedc_status need_nvrtc(void) {
  pthread_once(&n_once, load);
  if (N.lib) return SCHEDC_OK;
  return sc_err(SCHEDC_EUNAVAIL, "NVRTC is not available (looked for %s); install the CUDA toolkit or set "
                "SCHEDC_NVRTC to libnvrtc.so", N.where);
}

schedc_status sc_nvrtc_version(int *major, int *minor) {
  *major = *minor = -1;
  schedc_status st = need_nvrtc();
  if (st == SCHEDC_OK) N.Version(major, minor);
  return st;
}

schedc_status sc_nvrtc_compile(const char *src, const char *const *opts, int nopts, int ptx, char **out, size_t *len,
                               char **log) {
  *out = NULL;
  *log = NULL;
  schedc_status st = need_nvrtc();
  if (st != SCHEDC_OK) return st;
  sc_nvrtc_prog p;
  int r = N.CreateProgram(&p, src, "schedc.cu", 0, NULL, NULL);
  if (r) return sc_err(SCHEDC_EINTERNAL, "nvrtcCreateProgram: %s", N.GetErrorString(r));
  r = N.CompileProgram(p, nopts, opts);
  size_t ls = 0;
  if (N.GetProgramLogSize(p, &ls) == 0 && ls > 1 && (*log = malloc(ls))) N.GetProgramLog(p, *log);
  if (r) {
    N.DestroyProgram(&p);
    return SCHEDC_EINVAL; /* the caller adds the log, options and dumped source */
  }
  size_t n = 0;
  r = ptx ? N.GetPTXSize(p, &n) : N.GetCUBINSize(p, &n);
  if (!r && (*out = malloc(n + 1))) {
    r = ptx ? N.GetPTX(p, *out) : N.GetCUBIN(p, *out);
    (*out)[n] = 0;
    *len = n;
  }
  N.DestroyProgram(&p);
  if (r || !*out) {
    free(*out);
    *out = NULL;
    return sc_err(r ? SCHEDC_EINTERNAL : SCHEDC_ENOMEM, "NVRTC: cannot fetch the %s", ptx ? "PTX" : "cubin");
  }
  return SCHEDC_OK;
}

void sc_nvrtc_probe(sc_probe *p) {
  pthread_once(&n_once, load);
  p->built = 1;
  p->found = N.lib != NULL;
  if (!N.lib) {
    snprintf(p->why, sizeof p->why, "%s%.900s; install the CUDA toolkit or set SCHEDC_NVRTC", N.lacks ? "" : "looked for ",
             N.where);
    return;
  }
  sc_dl_handle_path(N.lib, p->path, sizeof p->path);
  int major = -1, minor = -1;
  if (N.Version(&major, &minor) == 0) snprintf(p->version, sizeof p->version, "%d.%d", major, minor);
}
