/*
 * cuda_dev.h — the few device operations the cuda communicator needs, behind one table, so the
 * same communicator code runs on the CUDA driver (cuda_driver.c, dlopen'ed libcuda) or on the
 * emulated device (cuda_emu.c: the generated kernels compiled for the host, for machines
 * without a GPU). Pointers are device addresses (unified addressing); streams are opaque.
 */
#ifndef SC_CUDA_DEV_H
#define SC_CUDA_DEV_H

#include <stddef.h>

#include "schedc/schedc.h"

/* An interprocess handle to a device allocation (the size of a CUipcMemHandle). */
typedef struct sc_ipc { unsigned char b[64]; } sc_ipc;

typedef struct sc_cudev {
  const char *name;
  /* Load the driver and count the devices. SCHEDC_EUNAVAIL (no driver or no device). */
  schedc_status (*init)(int *ndev);
  /* Architecture ("sm_90"), multiprocessors, clock64 ticks per second, cooperative launch,
   * threads per block to use. */
  schedc_status (*info)(int dev, char arch[16], int *sms, double *ticks_per_s, int *coop, int *threads);
  /* Make `dev` current for this thread (its primary context). */
  schedc_status (*select)(int dev);
  /* Let kernels on the current device read and write `peer`'s memory. */
  schedc_status (*peer)(int peer);
  /* Zeroed device memory of the current device. */
  schedc_status (*alloc)(size_t bytes, void **p);
  void (*release)(void *p);
  /* Stream-ordered copy (any direction; overlap not allowed). */
  schedc_status (*copy)(void *dst, const void *src, size_t bytes, void *stream);
  /* A module from generated source for `arch` (compiled and cached); kernel by name. */
  schedc_status (*load)(const char *source, const char *arch, void **module);
  void (*unload)(void *module);
  schedc_status (*kernel)(void *module, const char *name, void **fn);
  /* Launch on a stream; coop: every block resident at once, or an error. */
  schedc_status (*launch)(void *fn, unsigned grid, unsigned block, void **params, int coop, void *stream);
  schedc_status (*stream_new)(void **stream);
  void (*stream_free)(void *stream);
  /* Block the host until `stream`'s work is done. */
  schedc_status (*sync)(void *stream);
  /* Without blocking: *done = 1 when `stream`'s work is done (a timed drain polls it). */
  schedc_status (*query)(void *stream, int *done);
  /* Work enqueued on `waiter` from now on waits for what `stream` holds now. */
  schedc_status (*join)(void *waiter, void *stream);
  /* The device's identity on this host (PCI domain, bus, device), so that two processes never
   * take one GPU even when their device numbers differ (CUDA_VISIBLE_DEVICES). */
  schedc_status (*ident)(int dev, unsigned long long *id);
  /* Interprocess sharing of device memory (one process per GPU): a handle to an allocation of
   * this process, mapped by a peer process with ipc_open (peer access enabled as needed) and
   * unmapped with ipc_close. The owner keeps the allocation until every peer has unmapped it. */
  schedc_status (*ipc_get)(void *p, sc_ipc *h);
  schedc_status (*ipc_open)(const sc_ipc *h, void **p);
  void (*ipc_close)(void *p);
} sc_cudev;

extern const sc_cudev sc_cudev_driver;
extern const sc_cudev sc_cudev_emu;

/* The device table in use: the emulator when SCHEDC_CUDA_EMULATE=1, else the driver; NULL
 * (SCHEDC_EINVAL's message set) when SCHEDC_CUDA_EMULATE is malformed. */
const sc_cudev *sc_cudev_get(void);

#endif
