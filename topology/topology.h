/*
 * topology.h — the machine model behind `schedc topo` (docs/topology.md): hosts; per host the
 * NUMA nodes, PCIe switches, GPUs, NICs and NVLink links. Filled by discovery (hwloc + NVML) or
 * an import (NCCL or hwloc XML); then sc_tp_finish derives what plans use: each GPU's nearest
 * NICs, the NVLink kind, the ranks with their group at each level, and the levels' numbers.
 * One owner (the sc_tp); every string and array in it is freed by sc_tp_free.
 */
#ifndef SC_TOPOLOGY_H
#define SC_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "probe.h"
#include "schedc/schedc.h"

#define SC_TP_BUSID 16 /* "dddd:bb:dd.f" + NUL */
#define SC_TP_MAX_LEVELS 6

typedef enum { SC_NV_UNKNOWN = 0, SC_NV_NONE, SC_NV_MESH, SC_NV_NVSWITCH } sc_nvkind;
typedef enum { SC_REMOTE_UNKNOWN = 0, SC_REMOTE_GPU, SC_REMOTE_NVSWITCH } sc_remote;

typedef struct sc_tp_numa { int host, id, package, cpus; } sc_tp_numa;
/* A PCI device's place: its NUMA node (index into numa[] of its host, -1 unknown), its PCIe
 * switch (the top bridge below the host bridge or CPU, -1 when attached directly) and its host
 * bridge (-1 unknown); switch and bridge ids are unique within a host. */
typedef struct sc_tp_place { int numa, sw, bridge; } sc_tp_place;
typedef struct sc_tp_gpu {
  int host, rank;                /* rank: the file's (NCCL's rank="") or -1: assigned in sc_tp_finish */
  char busid[SC_TP_BUSID];
  sc_tp_place at;
  double pcie_gbps;              /* its PCIe link, 0 unknown */
  int nics[8], nnics;            /* nearest NICs (indices into nic[]), bus order */
} sc_tp_gpu;
typedef struct sc_tp_nic {
  int host;
  char busid[SC_TP_BUSID];       /* "" for a NIC without a PCI device (virtual) */
  char name[64];
  long speed_mbps;               /* 0 unknown */
  int rdma;                      /* 1: RDMA (hwloc shows an OpenFabrics device), 0: not (plain Ethernet,
                                  * e.g. AWS's ENA beside its EFA), -1: unknown (NCCL files list the NICs
                                  * NCCL uses) */
  sc_tp_place at;
} sc_tp_nic;
typedef struct sc_tp_link {
  int gpu;                       /* index into gpu[] */
  char remote[SC_TP_BUSID];      /* "" when the far end is invisible (the fffffff:ff:ff.0 sentinel) */
  sc_remote kind;
  int count;                     /* links in this bundle */
} sc_tp_link;
typedef struct sc_tp_host {
  char name[64];
  int npackages, ncores, npus, nswitches;
  char caches[96];               /* e.g. "L3 32MiB x2, L2 1MiB x16" */
  sc_nvkind nvlink;
} sc_tp_host;

/* A level: ranks whose groups first differ here talk over this link (docs/topology.md). */
typedef struct sc_tp_level { char name[16]; char kind[8]; double gbps, alpha_us; } sc_tp_level;

typedef struct sc_tp {
  sc_tp_host *host; int nhost;
  sc_tp_numa *numa; int nnuma;
  sc_tp_gpu *gpu; int ngpu;
  sc_tp_nic *nic; int nnic;
  sc_tp_link *link; int nlink;
  /* derived by sc_tp_finish, which first groups the elements by host: host h's GPUs are
   * gpu[host_gpu[h]] .. gpu[host_gpu[h+1] - 1] in bus order, its NICs and NUMA entries likewise
   * (host_nic, host_numa; in the order added), and GPU i's links link[gpu_link[i]] ..
   * link[gpu_link[i+1] - 1]. So every derivation and writer is linear in the file's size. */
  int *host_gpu, *host_nic, *host_numa, *gpu_link;
  int nranks, nlevels;
  sc_tp_level level[SC_TP_MAX_LEVELS];
  int *group;                    /* [nranks * nlevels]: rank r's id at level l (within its parent) */
  int *nic_of;                   /* [nranks]: nearest NIC index or -1 */
  int *gpu_of;                   /* [nranks]: GPU index or -1 (CPU ranks) */
  const char *source;            /* what it came from ("hwloc", "NCCL XML", ...) */
} sc_tp;

sc_tp *sc_tp_new(void);
void sc_tp_free(sc_tp *t);
/* Appenders: the index of the new element, or -1 on OOM. Elements are zeroed with places -1. */
int sc_tp_add_host(sc_tp *t, const char *name);
int sc_tp_add_numa(sc_tp *t, int host, int id, int package, int cpus);
int sc_tp_add_gpu(sc_tp *t, int host, const char *busid);
int sc_tp_add_nic(sc_tp *t, int host, const char *busid, const char *name);
int sc_tp_add_link(sc_tp *t, int gpu, const char *remote, sc_remote kind, int count);
/* A bus id normalised to "dddd:bb:dd.f" lower case into out[SC_TP_BUSID]: 1; 0 when it is not
 * one; 2 for the invisible-end sentinel (all-f domain and bus: "fffffff:ff:ff.0"). */
int sc_tp_busid(const char *in, char out[SC_TP_BUSID]);

/* Group the elements by host (reordering gpu[], nic[], numa[] and link[]: indices taken before
 * do not survive), then derive nearest NICs, NVLink kinds, ranks and levels; SCHEDC_OK or an
 * error (sc_err set): no host, a host without ranks, duplicate or out-of-range rank="" numbers,
 * too many ranks. Time and memory linear in the elements (but for sorts). */
schedc_status sc_tp_finish(sc_tp *t);
/* The grouping step of sc_tp_finish (group.c): sorts the elements and fills host_gpu, host_nic,
 * host_numa and gpu_link. SCHEDC_OK, or an error when an element names a host or GPU that is not
 * there or memory runs out. */
schedc_status sc_tp_group(sc_tp *t);
/* A 64-bit fingerprint of what plans depend on (hosts, ranks, groups, levels' numbers). */
uint64_t sc_tp_fingerprint(const sc_tp *t);

/* Writers (write.c): malloc'd NUL-terminated text, NULL on OOM. */
char *sc_tp_summary(const sc_tp *t);
char *sc_tp_json(const sc_tp *t);
char *sc_tp_lua(const sc_tp *t);

/* Importers. NCCL XML (nccl.c) from memory: name is the file name used in "name:line: why".
 * SCHEDC_OK, or SCHEDC_EINVAL with the message in sc_err. */
schedc_status sc_tp_import_nccl(sc_tp *t, const char *name, const char *text, size_t len);
/* hwloc (hwloc.c): discovery of this machine, an hwloc XML file, or a synthetic description
 * ("pack:2 core:4"). SCHEDC_EUNAVAIL when built without hwloc. */
schedc_status sc_tp_discover(sc_tp *t);
schedc_status sc_tp_import_hwloc_xml(sc_tp *t, const char *path);
schedc_status sc_tp_synthetic(sc_tp *t, const char *desc);
/* NVML (nvml.c): add the NVLink links of this machine's GPUs of host 0 (dlopen'd; nothing is
 * added and 0 returned without a driver). The number of links added. */
int sc_tp_nvml_links(sc_tp *t);
/* `schedc info` (runtime/info.c, probe.h): hwloc as this build has it (built in or not; the
 * library's file and API version) and NVML (loaded or why not). */
void sc_tp_hwloc_probe(sc_probe *p);
void sc_tp_nvml_probe(sc_probe *p);

#endif
