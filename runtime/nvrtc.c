/*
 * nvrtc.c — dlopen'ed NVRTC (see nvrtc.h). The entry points are declared here with the types of
 * NVRTC's public ABI (opaque handles, int status). The driver is in cuda_driver.c.
 */
#define _GNU_SOURCE
#include "nvrtc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "err.h"

typedef struct nvrtc_prog_ *nvrtc_prog;
static struct {
  void *lib;
  char where[1024];
  int (*version)(int *, int *);
  int (*create)(nvrtc_prog *, const char *, const char *, int, const char *const *, const char *const *);
  int (*destroy)(nvrtc_prog *);
  int (*compile)(nvrtc_prog, int, const char *const *);
  int (*log_size)(nvrtc_prog, size_t *);
  int (*log)(nvrtc_prog, char *);
  int (*ptx_size)(nvrtc_prog, size_t *);
  int (*ptx)(nvrtc_prog, char *);
  int (*cubin_size)(nvrtc_prog, size_t *);
  int (*cubin)(nvrtc_prog, char *);
  const char *(*errstr)(int);
} N;
static pthread_once_t n_once = PTHREAD_ONCE_INIT;

static void load(void) {
  const char *env = getenv("SCHEDC_NVRTC"), *home = getenv("CUDA_HOME");
  char homelib[512] = "";
  if (home) snprintf(homelib, sizeof homelib, "%s/lib64/libnvrtc.so", home);
  const char *cands[] = {env, "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", homelib[0] ? homelib : NULL,
                         "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13"};
  if (!(N.lib = sc_dl_first(cands, sizeof cands / sizeof cands[0], N.where, sizeof N.where))) return;
  sc_dlsym syms[] = {
#define SYM(f, name) {(void **)&N.f, name}
      SYM(version, "nvrtcVersion"), SYM(create, "nvrtcCreateProgram"), SYM(destroy, "nvrtcDestroyProgram"),
      SYM(compile, "nvrtcCompileProgram"), SYM(log_size, "nvrtcGetProgramLogSize"), SYM(log, "nvrtcGetProgramLog"),
      SYM(ptx_size, "nvrtcGetPTXSize"), SYM(ptx, "nvrtcGetPTX"), SYM(cubin_size, "nvrtcGetCUBINSize"),
      SYM(cubin, "nvrtcGetCUBIN"), SYM(errstr, "nvrtcGetErrorString"),
#undef SYM
  };
  const char *missing = sc_dl_syms(N.lib, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    N.lib = NULL;
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
  if (st == SCHEDC_OK) N.version(major, minor);
  return st;
}

schedc_status sc_nvrtc_compile(const char *src, const char *const *opts, int nopts, int ptx, char **out, size_t *len,
                               char **log) {
  *out = NULL;
  *log = NULL;
  schedc_status st = need_nvrtc();
  if (st != SCHEDC_OK) return st;
  nvrtc_prog p;
  int r = N.create(&p, src, "schedc.cu", 0, NULL, NULL);
  if (r) return sc_err(SCHEDC_EINTERNAL, "nvrtcCreateProgram: %s", N.errstr(r));
  r = N.compile(p, nopts, opts);
  size_t ls = 0;
  if (N.log_size(p, &ls) == 0 && ls > 1 && (*log = malloc(ls))) N.log(p, *log);
  if (r) {
    N.destroy(&p);
    return SCHEDC_EINVAL; /* the caller adds the log, options and dumped source */
  }
  size_t n = 0;
  r = ptx ? N.ptx_size(p, &n) : N.cubin_size(p, &n);
  if (!r && (*out = malloc(n + 1))) {
    r = ptx ? N.ptx(p, *out) : N.cubin(p, *out);
    (*out)[n] = 0;
    *len = n;
  }
  N.destroy(&p);
  if (r || !*out) {
    free(*out);
    *out = NULL;
    return sc_err(r ? SCHEDC_EINTERNAL : SCHEDC_ENOMEM, "NVRTC: cannot fetch the %s", ptx ? "PTX" : "cubin");
  }
  return SCHEDC_OK;
}
