/*
 * cuda_plugin.c — which device and network tables the cuda backend uses: the CUDA driver and
 * NCCL, or those of the shared object SCHEDC_CUDA_PLUGIN names (cuda_plugin.h; internal, for
 * the tests' emulated GPU), loaded once per process with dlopen; and schedc_cuda_device_count,
 * the devices of the table in use, with what `schedc info` says of them (sc_cuda_probe).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cuda_plugin.h"
#include "dl.h"
#include "err.h"
#include "fileio.h"
#include "params.h"

static struct {
  char path[512]; /* SCHEDC_CUDA_PLUGIN when first used: one plugin per process */
  sc_cuda_plugin tab;
  char why[768];
  sc_cudev dev_failed; /* a plugin that could not be loaded: the driver's table, refusing at init */
  sc_cunet net_failed;
} P;
static pthread_once_t p_once = PTHREAD_ONCE_INIT;

static schedc_status refuse(void) {
  return sc_err(SCHEDC_EUNAVAIL, "the cuda backend is unavailable: SCHEDC_CUDA_PLUGIN=%s: %s", P.path, P.why);
}
static schedc_status dev_refuse(int *ndev) {
  *ndev = 0;
  return refuse();
}
/* Also select: a communicator's cleanup selects its devices, and its error is what the caller
 * reads last. */
static schedc_status dev_refuse_select(int dev) {
  (void)dev;
  return refuse();
}
static schedc_status net_refuse(int *version) {
  *version = 0;
  return refuse();
}

static void load(void) {
  const char *e = sc_param_str(SC_P_SCHEDC_CUDA_PLUGIN);
  snprintf(P.path, sizeof P.path, "%s", e ? e : "");
  const char *cands[] = {P.path};
  char tried[sizeof P.path];
  void *lib = sc_dl_first(cands, 1, tried, sizeof tried);
  if (!lib) {
    snprintf(P.why, sizeof P.why, "cannot load it: %s", dlerror());
  } else {
    sc_cuda_plugin_fn *entry = NULL;
    sc_dlsym sym = {(void **)&entry, SC_CUDA_PLUGIN_SYMBOL};
    if (sc_dl_syms(lib, &sym, 1)) {
      snprintf(P.why, sizeof P.why, "no %s (not a schedc plugin of version %d)", SC_CUDA_PLUGIN_SYMBOL,
               SC_CUDA_PLUGIN_VERSION);
    } else {
      static const sc_cuda_host host = {SC_CUDA_PLUGIN_VERSION, sc_err_str, sc_cache_dir};
      if (entry(&host, &P.tab) != SCHEDC_OK || !P.tab.dev)
        snprintf(P.why, sizeof P.why, "%s failed: %s", SC_CUDA_PLUGIN_SYMBOL, schedc_errmsg());
      else if (!P.tab.net)
        P.tab.net = &sc_cunet_nccl;
      /* never dlclosed: the tables, and kernels the plugin loaded, live as long as the process */
    }
  }
  if (!P.tab.dev || !P.tab.net) {
    P.dev_failed = sc_cudev_driver; /* its other entries are safe uninitialised, as with no driver */
    P.dev_failed.init = dev_refuse;
    P.dev_failed.select = dev_refuse_select;
    P.net_failed = sc_cunet_nccl;
    P.net_failed.load = net_refuse;
    P.tab.dev = &P.dev_failed;
    P.tab.net = &P.net_failed;
  }
}

/* The plugin's tables when SCHEDC_CUDA_PLUGIN is set and not empty, else NULL. */
static const sc_cuda_plugin *plugin(void) {
  const char *e = sc_param_str(SC_P_SCHEDC_CUDA_PLUGIN);
  if (!e || !*e) return NULL;
  pthread_once(&p_once, load);
  return &P.tab;
}

const sc_cudev *sc_cudev_get(void) {
  const sc_cuda_plugin *p = plugin();
  return p ? p->dev : &sc_cudev_driver;
}

const sc_cunet *sc_cunet_get(void) {
  const sc_cuda_plugin *p = plugin();
  return p ? p->net : &sc_cunet_nccl;
}

int schedc_cuda_device_count(void) {
  int n = 0;
  const sc_cudev *dv = sc_cudev_get();
  return dv->init(&n) == SCHEDC_OK ? n : 0;
}

void sc_cuda_probe(sc_probe *p) {
  int n = 0;
  const sc_cudev *dv = sc_cudev_get();
  p->built = 1;
  p->found = dv->init(&n) == SCHEDC_OK && n > 0;
  if (!p->found) snprintf(p->why, sizeof p->why, "%s", schedc_errmsg());
  else if (plugin()) snprintf(p->why, sizeof p->why, "the devices of the test plugin SCHEDC_CUDA_PLUGIN=%s", P.path);
}

int sc_cuda_gpus(sc_gpu_seen *out, int cap) {
  int n = 0, k = 0;
  const sc_cudev *dv = sc_cudev_get();
  if (dv->init(&n) != SCHEDC_OK) return 0;
  for (int d = 0; d < n && k < cap; d++, k++) {
    double ticks;
    int coop, threads;
    memset(&out[k], 0, sizeof out[k]);
    if (dv->info(d, out[k].arch, &out[k].sms, &ticks, &coop, &threads) != SCHEDC_OK) snprintf(out[k].arch, sizeof out[k].arch, "?");
  }
  return n;
}
