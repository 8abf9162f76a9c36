/*
 * nvml.c — NVLink links from NVML, loaded with dlopen (libnvidia-ml.so.1; no nvml.h is needed:
 * the few types and functions are declared here as NVML documents them, as NCCL does). For each
 * discovered GPU and each link: its state, the remote PCI bus id and the remote device type.
 * No driver: nothing is added and the hosts' NVLink kind stays "unknown".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "dl.h"
#include "topology.h"

typedef int nvml_ret;                 /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_dev_st *nvml_dev; /* nvmlDevice_t */
typedef struct nvml_pci {             /* nvmlPciInfo_t (v3 layout) */
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} nvml_pci;
enum { NVML_MAX_LINKS = 18, NVML_TYPE_GPU = 0, NVML_TYPE_SWITCH = 2 };
static const char nvml_lib[] = "libnvidia-ml.so.1";

int sc_tp_nvml_links(sc_tp *t) {
  void *lib = dlopen(nvml_lib, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlInit_v2");
  nvml_ret (*shutdown)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlShutdown");
  nvml_ret (*by_bus)(const char *, nvml_dev *) = (nvml_ret(*)(const char *, nvml_dev *))dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
  nvml_ret (*state)(nvml_dev, unsigned, int *) = (nvml_ret(*)(nvml_dev, unsigned, int *))dlsym(lib, "nvmlDeviceGetNvLinkState");
  nvml_ret (*remote)(nvml_dev, unsigned, nvml_pci *) = (nvml_ret(*)(nvml_dev, unsigned, nvml_pci *))dlsym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  nvml_ret (*rtype)(nvml_dev, unsigned, int *) = (nvml_ret(*)(nvml_dev, unsigned, int *))dlsym(lib, "nvmlDeviceGetNvLinkRemoteDeviceType");
  int added = 0;
  if (!init || !shutdown || !by_bus || !state || !remote || init() != 0) { dlclose(lib); return 0; }
  for (int g = 0; g < t->ngpu; g++) {
    nvml_dev d;
    if (by_bus(t->gpu[g].busid, &d) != 0) continue;
    int any = 0;
    for (unsigned l = 0; l < NVML_MAX_LINKS; l++) {
      int active = 0, type = -1;
      if (state(d, l, &active) != 0) break; /* past the GPU's last link */
      if (!active) continue;
      nvml_pci p;
      memset(&p, 0, sizeof p);
      char bus[SC_TP_BUSID] = "";
      if (remote(d, l, &p) == 0) {
        p.busId[sizeof p.busId - 1] = 0;
        if (sc_tp_busid(p.busId, bus) != 1) bus[0] = 0; /* the sentinel or garbage: invisible end */
      }
      if (rtype && rtype(d, l, &type) != 0) type = -1;
      sc_remote k = type == NVML_TYPE_SWITCH ? SC_REMOTE_NVSWITCH : type == NVML_TYPE_GPU ? SC_REMOTE_GPU : SC_REMOTE_UNKNOWN;
      /* one bundle per (remote, kind): merge with the previous link of this GPU to the same end */
      int merged = 0;
      for (int i = t->nlink - 1; i >= 0 && t->link[i].gpu == g && !merged; i--)
        if (!strcmp(t->link[i].remote, bus) && t->link[i].kind == k) { t->link[i].count++; merged = 1; }
      if (!merged && sc_tp_add_link(t, g, bus, k, 1) < 0) break;
      added++;
      any = 1;
    }
    if (!any) t->host[t->gpu[g].host].nvlink = SC_NV_NONE; /* NVML answered: no active link */
  }
  shutdown();
  dlclose(lib);
  return added;
}

void sc_tp_nvml_probe(sc_probe *p) {
  p->built = 1;
  void *lib = dlopen(nvml_lib, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    snprintf(p->why, sizeof p->why, "%s (comes with the NVIDIA driver; topo then leaves NVLink unknown)",
             e ? e : nvml_lib);
    return;
  }
  p->found = 1;
  sc_dl_handle_path(lib, p->path, sizeof p->path);
  nvml_ret (*init)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlInit_v2");
  nvml_ret (*shutdown)(void) = (nvml_ret(*)(void))dlsym(lib, "nvmlShutdown");
  nvml_ret (*version)(char *, unsigned) = (nvml_ret(*)(char *, unsigned))dlsym(lib, "nvmlSystemGetDriverVersion");
  char v[80] = "";
  if (init && shutdown && version && init() == 0) {
    if (version(v, sizeof v) == 0) snprintf(p->version, sizeof p->version, "driver %s", v);
    shutdown();
  }
  dlclose(lib);
}
