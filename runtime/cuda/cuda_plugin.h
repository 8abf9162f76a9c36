/*
 * cuda_plugin.h — the internal, test-only ABI by which a shared object replaces the cuda
 * backend's device and network tables (cuda_dev.h, cuda_net.h): SCHEDC_CUDA_PLUGIN names it,
 * cuda_plugin.c loads it. The tests' emulated GPU (tests/emu/) is the one plugin; not a public API.
 */
#ifndef SC_CUDA_PLUGIN_H
#define SC_CUDA_PLUGIN_H

#include "cuda_dev.h"
#include "cuda_net.h"
#include "schedc/schedc.h"

/* Bumped on any change to this header, sc_cudev or sc_cunet. It is part of the entry point's
 * name (NCCL's net plugins do the same), so a plugin built against another version is refused
 * as lacking the symbol instead of being called with tables of another layout. */
#define SC_CUDA_PLUGIN_VERSION 1
#define SC_CUDA_PLUGIN_SYMBOL "sc_cuda_plugin_v1"

/* What the library lends the plugin. The plugin is a separate shared object: it must not call
 * libschedc's internal functions (they are hidden, and a second copy of err.c would keep its own
 * thread-local message), so errors go through err, which sets the calling thread's
 * schedc_errmsg() detail (a copy of msg) and returns st; cache_dir is the library's compiled-kernel
 * cache folder (SCHEDC_CACHE_DIR's rule: 1 with the path in buf, created; 0: no cache), so the
 * plugin needs no copy of the parameter list. */
typedef struct sc_cuda_host {
  int version; /* SC_CUDA_PLUGIN_VERSION of the library */
  schedc_status (*err)(schedc_status st, const char *msg);
  int (*cache_dir)(char *buf, size_t cap);
} sc_cuda_host;

/* What the plugin gives back: tables that stay valid for the process (the library never
 * dlcloses the plugin). net NULL: NCCL as without a plugin. */
typedef struct sc_cuda_plugin {
  const sc_cudev *dev;
  const sc_cunet *net;
} sc_cuda_plugin;

/* The entry point, exported as SC_CUDA_PLUGIN_SYMBOL and called once per process, before any
 * table entry: SCHEDC_OK with *out filled, or a status with host->err's detail (the cuda
 * backend then reports it from dev->init and net->load). */
typedef schedc_status sc_cuda_plugin_fn(const sc_cuda_host *host, sc_cuda_plugin *out);

#endif
