/*
 * cuda_nccl.c — transfers between nodes on NCCL (cuda_net.h), loaded with dlopen: the entry
 * points are declared in dl_abi.h with NCCL's ABI types (int results and enums, opaque communicators
 * and streams, the 128-byte unique id by value), so the build needs neither NCCL nor CUDA.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cuda_net.h"
#include "dl.h"
#include "dl_abi.h"
#include "err.h"
#include "params.h"

static struct {
  void *lib;
  char why[512];
  int version;
  SC_ABI_NCCL(SC_ABI_FIELD)
} L;
static pthread_once_t l_once = PTHREAD_ONCE_INIT;

static void load_lib(void) {
  const char *env = sc_param_str(SC_P_SCHEDC_LIBNCCL), *home = sc_param_str(SC_P_CUDA_HOME);
  char homelib[512] = "";
  if (home && *home) snprintf(homelib, sizeof homelib, "%s/lib64/libnccl.so.2", home);
  const char *cands[] = {env, "libnccl.so.2", homelib[0] ? homelib : NULL, "/usr/local/cuda/lib64/libnccl.so.2"};
  if (!(L.lib = sc_dl_first(cands, sizeof cands / sizeof cands[0], L.why, sizeof L.why))) return;
  sc_dlsym syms[] = {
#define S(f, sym, res, params) SC_ABI_SYM(L, f, sym)
      SC_ABI_NCCL(S)
#undef S
  };
  const char *missing = sc_dl_syms(L.lib, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    snprintf(L.why, sizeof L.why, "NCCL found but lacks %s, which schedc uses", missing);
    L.lib = NULL;
    return;
  }
  if (L.GetVersion(&L.version)) L.version = 0;
}

static schedc_status fail(const char *what, int r, void *comm) {
  const char *last = comm && L.GetLastError ? L.GetLastError(comm) : NULL;
  return sc_err(SCHEDC_EPEER, "NCCL %s: %s (error %d)%s%s", what, L.GetErrorString ? L.GetErrorString(r) : "?", r,
                last && *last ? ": " : "", last && *last ? last : "");
}
#define CK(what, call, comm) do { int r_ = (call); if (r_) return fail(what, r_, comm); } while (0)

static schedc_status nccl_load(int *version) {
  pthread_once(&l_once, load_lib);
  *version = L.version;
  if (!L.lib)
    return sc_err(SCHEDC_EUNAVAIL, "NCCL is not available (%s%s); install it or set SCHEDC_LIBNCCL to libnccl.so.2",
                  strchr(L.why, ' ') ? "" : "looked for ", L.why);
  return SCHEDC_OK;
}

static schedc_status nccl_unique_id(sc_netid *id) {
  int v;
  schedc_status st = nccl_load(&v);
  if (st != SCHEDC_OK) return st;
  sc_nccl_id u;
  CK("ncclGetUniqueId", L.GetUniqueId(&u), NULL);
  memcpy(id->b, u.b, sizeof u.b);
  return SCHEDC_OK;
}

static schedc_status nccl_init(const sc_netid *id, int nranks, int rank, double timeout_s, void **comm) {
  (void)timeout_s; /* NCCL's own bootstrap has its timeouts */
  int v;
  schedc_status st = nccl_load(&v);
  if (st != SCHEDC_OK) return st;
  sc_nccl_id u;
  memcpy(u.b, id->b, sizeof u.b);
  CK("ncclCommInitRank", L.CommInitRank(comm, nranks, u, rank), NULL);
  return SCHEDC_OK;
}

static schedc_status nccl_group_start(void) { CK("ncclGroupStart", L.GroupStart(), NULL); return SCHEDC_OK; }
static schedc_status nccl_group_end(void) { CK("ncclGroupEnd", L.GroupEnd(), NULL); return SCHEDC_OK; }

static schedc_status nccl_send(void *comm, const void *buf, size_t bytes, int peer, void *stream) {
  CK("ncclSend", L.Send(buf, bytes, SC_NCCL_UINT8, peer, comm, stream), comm);
  return SCHEDC_OK;
}

static schedc_status nccl_recv(void *comm, void *buf, size_t bytes, int peer, void *stream) {
  CK("ncclRecv", L.Recv(buf, bytes, SC_NCCL_UINT8, peer, comm, stream), comm);
  return SCHEDC_OK;
}

static schedc_status nccl_health(void *comm) {
  int r = 0;
  CK("ncclCommGetAsyncError", L.CommGetAsyncError(comm, &r), comm);
  if (r && r != SC_NCCL_IN_PROGRESS) return fail("(asynchronous)", r, comm);
  return SCHEDC_OK;
}

static void nccl_destroy(void *comm, int abort) {
  if (comm && L.lib) (abort ? L.CommAbort : L.CommDestroy)(comm);
}

const sc_cunet sc_cunet_nccl = {"nccl", nccl_load, nccl_unique_id, nccl_init, nccl_group_start, nccl_send,
                                nccl_recv, nccl_group_end, nccl_health, nccl_destroy};

void sc_nccl_probe(sc_probe *p) {
  pthread_once(&l_once, load_lib);
  p->built = 1;
  p->found = L.lib != NULL;
  if (!L.lib) {
    snprintf(p->why, sizeof p->why, "%s%s; install NCCL or set SCHEDC_LIBNCCL",
             strncmp(L.why, "NCCL found", 10) ? "looked for " : "", L.why);
    return;
  }
  sc_dl_handle_path(L.lib, p->path, sizeof p->path);
  int v = L.version; /* NCCL_VERSION_CODE: 2.9 and later MAJOR*10000 + MINOR*100 + PATCH, before MAJOR*1000 + ... */
  if (v >= 10000) snprintf(p->version, sizeof p->version, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  else if (v > 0) snprintf(p->version, sizeof p->version, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}
