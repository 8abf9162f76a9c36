/*
 * cuda_driver.c — the device table on the CUDA driver API (cuda_dev.h), loaded with dlopen: the
 * entry points are declared in dl_abi.h with the driver's ABI types (int status, opaque handles,
 * 64-bit device pointers), so the build needs no CUDA SDK. Modules come from NVRTC cubins
 * through the compile cache (schedc_cuda_compile).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cuda_dev.h"
#include "dl.h"
#include "dl_abi.h"
#include "err.h"
#include "params.h"

typedef sc_abi_res CUres;
typedef sc_cudptr CUdptr;
#define MAX_DEV 64

static struct {
  void *lib;
  char why[256];
  SC_ABI_CUDA(SC_ABI_FIELD)
  int ndev;
  void *ctx[MAX_DEV];
} D;
static pthread_once_t d_once = PTHREAD_ONCE_INIT;
static __thread int cur_dev = -1;

static void load(void) {
  const char *lib = sc_param_str(SC_P_SCHEDC_LIBCUDA); /* default: libcuda.so.1 */
  D.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!D.lib) {
    snprintf(D.why, sizeof D.why, "no CUDA driver (%s: %s)", lib, dlerror());
    return;
  }
  sc_dlsym syms[] = {
#define S(f, sym, res, params) SC_ABI_SYM(D, f, sym)
      SC_ABI_CUDA(S)
#undef S
  };
  const char *missing = sc_dl_syms(D.lib, syms, sizeof syms / sizeof syms[0]);
  if (missing) {
    snprintf(D.why, sizeof D.why, "the CUDA driver lacks %s", missing);
    D.lib = NULL;
    return;
  }
  CUres r = D.Init(0);
  if (r || D.DeviceGetCount(&D.ndev) || D.ndev < 1) {
    snprintf(D.why, sizeof D.why, "no CUDA device (cuInit: %d)", r);
    D.ndev = 0;
  }
  if (D.ndev > MAX_DEV) D.ndev = MAX_DEV;
}

/* A driver failure as a status with the entry point and the driver's words. */
static schedc_status fail(const char *what, CUres r) {
  const char *s = NULL;
  if (D.GetErrorString) D.GetErrorString(r, &s);
  return sc_err(r == SC_CU_ERR_OUT_OF_MEMORY ? SCHEDC_ENOMEM : SCHEDC_EINTERNAL, "CUDA %s: %s (error %d)", what,
                s ? s : "?", r);
}
#define CK(what, call) do { CUres r_ = (call); if (r_) return fail(what, r_); } while (0)

static schedc_status drv_init(int *ndev) {
  pthread_once(&d_once, load);
  *ndev = D.ndev;
  if (!D.lib || !D.ndev) return sc_err(SCHEDC_EUNAVAIL, "the cuda backend is unavailable: %s", D.why);
  return SCHEDC_OK;
}

static schedc_status drv_info(int dev, char arch[16], int *sms, double *ticks, int *coop, int *threads) {
  int d, maj = 0, min = 0, khz = 0;
  CK("cuDeviceGet", D.DeviceGet(&d, dev));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(&maj, SC_CU_ATTR_CC_MAJOR, d));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(&min, SC_CU_ATTR_CC_MINOR, d));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(sms, SC_CU_ATTR_SMS, d));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(&khz, SC_CU_ATTR_CLOCK_KHZ, d));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(coop, SC_CU_ATTR_COOP, d));
  snprintf(arch, 16, "sm_%d%d", maj, min);
  *ticks = khz > 0 ? khz * 1e3 : 2e9; /* clock64 counts SM cycles */
  *threads = 512;                     /* the kernels' __launch_bounds__ */
  return SCHEDC_OK;
}

/* The device's primary context, retained once for the process (communicators on several threads
 * may select the same device first at once). */
static schedc_status primary_ctx(int dev, void **ctx) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mu);
  CUres r = 0;
  const char *what = "cuDeviceGet";
  int d;
  if (!D.ctx[dev] && !(r = D.DeviceGet(&d, dev))) {
    what = "cuDevicePrimaryCtxRetain";
    r = D.PrimaryCtxRetain(&D.ctx[dev], d);
  }
  *ctx = D.ctx[dev];
  pthread_mutex_unlock(&mu);
  return r ? fail(what, r) : SCHEDC_OK;
}

static schedc_status drv_select(int dev) {
  if (dev < 0 || dev >= D.ndev) return sc_err(SCHEDC_EINVAL, "CUDA device %d out of range [0, %d)", dev, D.ndev);
  void *ctx;
  schedc_status st = primary_ctx(dev, &ctx);
  if (st != SCHEDC_OK) return st;
  CK("cuCtxSetCurrent", D.CtxSetCurrent(ctx));
  cur_dev = dev;
  return SCHEDC_OK;
}

static schedc_status drv_peer(int peer) {
  if (peer == cur_dev) return SCHEDC_OK;
  if (peer < 0 || peer >= D.ndev) return sc_err(SCHEDC_EINVAL, "CUDA device %d out of range [0, %d)", peer, D.ndev);
  void *ctx;
  schedc_status st = primary_ctx(peer, &ctx);
  if (st != SCHEDC_OK) return st;
  CUres r = D.CtxEnablePeerAccess(ctx, 0);
  if (r && r != SC_CU_ERR_PEER_ALREADY_ENABLED) return fail("cuCtxEnablePeerAccess", r);
  return SCHEDC_OK;
}

static schedc_status drv_alloc(size_t bytes, void **p) {
  CUdptr d = 0;
  CK("cuMemAlloc", D.MemAlloc(&d, bytes ? bytes : 16));
  CUres r = D.MemsetD8Async(d, 0, bytes, NULL);
  if (!r) r = D.StreamSynchronize(NULL);
  if (r) {
    D.MemFree(d);
    return fail("cuMemsetD8Async", r);
  }
  *p = (void *)(uintptr_t)d;
  return SCHEDC_OK;
}
static void drv_release(void *p) {
  if (p) D.MemFree((CUdptr)(uintptr_t)p);
}

static schedc_status drv_copy(void *dst, const void *src, size_t bytes, void *stream) {
  if (!bytes || dst == src) return SCHEDC_OK;
  CK("cuMemcpyAsync", D.MemcpyAsync((CUdptr)(uintptr_t)dst, (CUdptr)(uintptr_t)src, bytes, stream));
  return SCHEDC_OK;
}

static schedc_status drv_load(const char *source, const char *arch, void **module) {
  void *img;
  size_t len;
  schedc_status st = schedc_cuda_compile(source, arch, 0, &img, &len, NULL);
  if (st != SCHEDC_OK) return st;
  CUres r = D.ModuleLoadData(module, img);
  schedc_free(img);
  if (r) return fail("cuModuleLoadData", r);
  return SCHEDC_OK;
}
static void drv_unload(void *m) {
  if (m) D.ModuleUnload(m);
}
static schedc_status drv_kernel(void *m, const char *name, void **fn) {
  CK(name, D.ModuleGetFunction(fn, m, name));
  return SCHEDC_OK;
}

static schedc_status drv_launch(void *fn, unsigned grid, unsigned block, void **params, int coop, void *stream) {
  if (coop) CK("cuLaunchCooperativeKernel", D.LaunchCooperativeKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, params));
  else CK("cuLaunchKernel", D.LaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, stream, params, NULL));
  return SCHEDC_OK;
}

static schedc_status drv_stream_new(void **s) {
  CK("cuStreamCreate", D.StreamCreate(s, SC_CU_STREAM_NON_BLOCKING));
  return SCHEDC_OK;
}
static void drv_stream_free(void *s) {
  if (s) D.StreamDestroy(s);
}
static schedc_status drv_sync(void *s) {
  CK("cuStreamSynchronize", D.StreamSynchronize(s));
  return SCHEDC_OK;
}
static schedc_status drv_query(void *s, int *done) {
  CUres r = D.StreamQuery(s);
  *done = r != SC_CU_ERR_NOT_READY;
  if (r && r != SC_CU_ERR_NOT_READY) return fail("cuStreamQuery", r);
  return SCHEDC_OK;
}
static schedc_status drv_join(void *waiter, void *stream) {
  if (waiter == stream) return SCHEDC_OK;
  void *ev;
  CK("cuEventCreate", D.EventCreate(&ev, SC_CU_EVENT_DISABLE_TIMING));
  CUres r = D.EventRecord(ev, stream);
  if (!r) r = D.StreamWaitEvent(waiter, ev, 0);
  D.EventDestroy(ev); /* released once the wait has happened */
  if (r) return fail("cuStreamWaitEvent", r);
  return SCHEDC_OK;
}

static schedc_status drv_ident(int dev, unsigned long long *id) {
  int d, dom = 0, bus = 0, slot = 0;
  CK("cuDeviceGet", D.DeviceGet(&d, dev));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(&dom, SC_CU_ATTR_PCI_DOMAIN, d));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(&bus, SC_CU_ATTR_PCI_BUS, d));
  CK("cuDeviceGetAttribute", D.DeviceGetAttribute(&slot, SC_CU_ATTR_PCI_DEVICE, d));
  *id = (unsigned long long)(unsigned)dom << 32 | (unsigned long long)(unsigned)bus << 8 | (unsigned)slot;
  return SCHEDC_OK;
}

static schedc_status drv_ipc_get(void *p, sc_ipc *h) {
  CK("cuIpcGetMemHandle", D.IpcGetMemHandle(h, (CUdptr)(uintptr_t)p));
  return SCHEDC_OK;
}
static schedc_status drv_ipc_open(const sc_ipc *h, void **p) {
  CUdptr d = 0;
  CK("cuIpcOpenMemHandle", D.IpcOpenMemHandle(&d, *h, SC_CU_IPC_LAZY_ENABLE_PEER_ACCESS));
  *p = (void *)(uintptr_t)d;
  return SCHEDC_OK;
}
static void drv_ipc_close(void *p) {
  if (p) D.IpcCloseMemHandle((CUdptr)(uintptr_t)p);
}

const sc_cudev sc_cudev_driver = {"CUDA driver", drv_init, drv_info, drv_select, drv_peer, drv_alloc, drv_release,
                                  drv_copy, drv_load, drv_unload, drv_kernel, drv_launch, drv_stream_new,
                                  drv_stream_free, drv_sync, drv_query, drv_join, drv_ident, drv_ipc_get, drv_ipc_open,
                                  drv_ipc_close};

void sc_cudrv_probe(sc_probe *p) {
  pthread_once(&d_once, load);
  p->built = 1;
  p->found = D.lib != NULL;
  if (!D.lib) {
    snprintf(p->why, sizeof p->why, "%s; install the NVIDIA driver or set SCHEDC_LIBCUDA", D.why);
    return;
  }
  sc_dl_handle_path(D.lib, p->path, sizeof p->path);
  /* not one of the backend's entry points (dl_abi.h): asked here only */
  CUres (*get_version)(int *) = (CUres(*)(int *))dlsym(D.lib, "cuDriverGetVersion");
  int v = 0;
  if (get_version && get_version(&v) == 0 && v > 0)
    snprintf(p->version, sizeof p->version, "CUDA %d.%d", v / 1000, v % 1000 / 10);
  if (!D.ndev) snprintf(p->why, sizeof p->why, "%s", D.why);
}
