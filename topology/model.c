/*
 * model.c — the topology model's storage and what sc_tp_finish derives from it: nearest NICs,
 * NVLink kinds, the ranks (one per GPU, else one per core) and the levels with their numbers.
 * Numbers not read from the machine are public figures (docs/topology.md "Predicted numbers").
 */
#include "topology.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

sc_tp *sc_tp_new(void) { return calloc(1, sizeof(sc_tp)); }

void sc_tp_free(sc_tp *t) {
  if (!t) return;
  free(t->host);
  free(t->numa);
  free(t->gpu);
  free(t->nic);
  free(t->link);
  free(t->group);
  free(t->nic_of);
  free(t->gpu_of);
  free(t->host_gpu);
  free(t->host_nic);
  free(t->host_numa);
  free(t->gpu_link);
  free(t);
}

/* Grow *arr of *n elements of size sz by one zeroed element: its index or -1. The capacity is
 * implied by the count: 4, 8, 16, ... (the array is reallocated when *n is 0 or reaches a power
 * of two from 4 on), so n appends copy O(n) bytes in all; growing by one each time copied O(n^2)
 * under allocators that cannot extend in place (ASan's). Whoever reorders an array (group.c)
 * keeps its allocation. */
static int grow(void **arr, int *n, size_t sz) {
  if (*n >= 1 << 20) return -1; /* a bound no machine reaches: hostile input stops here */
  if (*n == 0 || (*n >= 4 && !(*n & (*n - 1)))) {
    void *p = realloc(*arr, (size_t)(*n ? 2 * *n : 4) * sz);
    if (!p) return -1;
    *arr = p;
  }
  memset((char *)*arr + (size_t)*n * sz, 0, sz);
  return (*n)++;
}

static void copy_str(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src ? src : "");
}

int sc_tp_add_host(sc_tp *t, const char *name) {
  int i = grow((void **)&t->host, &t->nhost, sizeof *t->host);
  if (i >= 0) {
    copy_str(t->host[i].name, sizeof t->host[i].name, name);
    t->host[i].nvlink = SC_NV_UNKNOWN;
  }
  return i;
}

int sc_tp_add_numa(sc_tp *t, int host, int id, int package, int cpus) {
  int i = grow((void **)&t->numa, &t->nnuma, sizeof *t->numa);
  if (i >= 0) t->numa[i] = (sc_tp_numa){host, id, package, cpus};
  return i;
}

static const sc_tp_place NOWHERE = {-1, -1, -1};

int sc_tp_add_gpu(sc_tp *t, int host, const char *busid) {
  int i = grow((void **)&t->gpu, &t->ngpu, sizeof *t->gpu);
  if (i >= 0) {
    t->gpu[i].host = host;
    t->gpu[i].rank = -1;
    t->gpu[i].at = NOWHERE;
    copy_str(t->gpu[i].busid, SC_TP_BUSID, busid);
  }
  return i;
}

int sc_tp_add_nic(sc_tp *t, int host, const char *busid, const char *name) {
  int i = grow((void **)&t->nic, &t->nnic, sizeof *t->nic);
  if (i >= 0) {
    t->nic[i].host = host;
    t->nic[i].rdma = -1;
    t->nic[i].at = NOWHERE;
    copy_str(t->nic[i].busid, SC_TP_BUSID, busid);
    copy_str(t->nic[i].name, sizeof t->nic[i].name, name);
  }
  return i;
}

int sc_tp_add_link(sc_tp *t, int gpu, const char *remote, sc_remote kind, int count) {
  int i = grow((void **)&t->link, &t->nlink, sizeof *t->link);
  if (i >= 0) {
    t->link[i] = (sc_tp_link){gpu, "", kind, count};
    copy_str(t->link[i].remote, SC_TP_BUSID, remote);
  }
  return i;
}

/* "dddd:bb:dd.f" with 1-8 hex digits of domain (NCCL pads to 4, VMs show 7 or 8 f's),
 * 2 of bus, 2 of device, 1 of function; "bb:dd.f" alone means domain 0. */
int sc_tp_busid(const char *in, char out[SC_TP_BUSID]) {
  unsigned long v[4] = {0, 0, 0, 0};
  int nd[4] = {0, 0, 0, 0}, part = 0;
  const char *s = in;
  if (!s) return 0;
  for (; *s; s++) {
    if (isxdigit((unsigned char)*s)) {
      if (++nd[part] > 8) return 0;
      v[part] = v[part] * 16 + (unsigned long)(isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10));
    } else if (*s == ':' && part < 2) part++;
    else if (*s == '.' && part == 2) part = 3;
    else return 0;
  }
  if (part != 3) return 0;
  if (!nd[0] || !nd[1] || !nd[2] || !nd[3]) return 0;
  if (nd[0] >= 7 && v[0] == (nd[0] == 8 ? 0xfffffffful : 0xffffffful) && v[1] == 0xff) { out[0] = 0; return 2; }
  if (v[0] > 0xffff || v[1] > 0xff || v[2] > 0x1f || v[3] > 7 || nd[1] > 2 || nd[2] > 2 || nd[3] > 1) return 0;
  snprintf(out, SC_TP_BUSID, "%04lx:%02lx:%02lx.%lx", v[0], v[1], v[2], v[3]);
  return 1;
}

/* ---- derivations -------------------------------------------------------------------------- */
/* Every loop below visits a host's own range of GPUs, NICs or NUMA entries (sc_tp_group), so a
 * fused dump of many hosts costs time linear in its size. */

static int cmp_nic_bus(const sc_tp *t, int a, int b) { return strcmp(t->nic[a].busid, t->nic[b].busid); }

/* A GPU's nearest NICs: sharing its PCIe switch; else under its host bridge; else on its NUMA
 * node; else any NIC of its host (its traffic leaves through one of them). Where the host has
 * RDMA NICs (hwloc: an OpenFabrics device), only those count: a plain Ethernet NIC beside them
 * (AWS's ENA beside its EFA) does not carry collective traffic. */
static void nearest_nics(sc_tp *t, sc_tp_gpu *g, int rdma_only) {
  g->nnics = 0;
  for (int tier = 0; tier < 4 && !g->nnics; tier++) {
    for (int i = t->host_nic[g->host]; i < t->host_nic[g->host + 1] && g->nnics < 8; i++) {
      const sc_tp_nic *n = &t->nic[i];
      if (rdma_only && n->rdma != 1) continue;
      int near = tier == 0 ? (g->at.sw >= 0 && n->at.sw == g->at.sw)
               : tier == 1 ? (g->at.bridge >= 0 && n->at.bridge == g->at.bridge)
               : tier == 2 ? (g->at.numa >= 0 && n->at.numa == g->at.numa)
                           : 1;
      if (near) g->nics[g->nnics++] = i;
    }
  }
  for (int i = 1; i < g->nnics; i++) /* bus order (insertion sort: at most 8) */
    for (int j = i; j > 0 && cmp_nic_bus(t, g->nics[j - 1], g->nics[j]) > 0; j--) {
      int x = g->nics[j]; g->nics[j] = g->nics[j - 1]; g->nics[j - 1] = x;
    }
}

static int host_has_rdma(const sc_tp *t, int h) {
  for (int i = t->host_nic[h]; i < t->host_nic[h + 1]; i++) if (t->nic[i].rdma == 1) return 1;
  return 0;
}

static void nvlink_kinds(sc_tp *t) {
  for (int h = 0; h < t->nhost; h++) {
    int sw = 0, gpu = 0, unk = 0, gpus = t->host_gpu[h + 1] - t->host_gpu[h];
    for (int l = t->gpu_link[t->host_gpu[h]]; l < t->gpu_link[t->host_gpu[h + 1]]; l++) {
      sw += t->link[l].kind == SC_REMOTE_NVSWITCH;
      gpu += t->link[l].kind == SC_REMOTE_GPU;
      unk += t->link[l].kind == SC_REMOTE_UNKNOWN;
    }
    if (sw) t->host[h].nvlink = SC_NV_NVSWITCH;
    else if (gpu) t->host[h].nvlink = SC_NV_MESH;
    else if (unk) t->host[h].nvlink = SC_NV_UNKNOWN;
    else if (!gpus) t->host[h].nvlink = SC_NV_NONE;
    /* else: what the importer said (NONE when it would have seen links, UNKNOWN without NVML) */
  }
}

/* The GPU of host h with bus id busid (binary search: a host's GPUs are in bus order), or -1. */
static int gpu_by_bus(const sc_tp *t, int h, const char *busid) {
  int lo = t->host_gpu[h], hi = t->host_gpu[h + 1] - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2, c = strcmp(t->gpu[mid].busid, busid);
    if (!c) return mid;
    if (c < 0) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

static int root_of(int *comp, int a) {
  while (comp[a] != a) { comp[a] = comp[comp[a]]; a = comp[a]; } /* path halving */
  return a;
}

/* NVLink components among a host's GPUs (GPU-GPU links, union-find): comp[gpu]. */
static void nvlink_components(const sc_tp *t, int *comp) {
  for (int i = 0; i < t->ngpu; i++) comp[i] = i;
  for (int l = 0; l < t->nlink; l++) {
    if (t->link[l].kind != SC_REMOTE_GPU || !t->link[l].remote[0]) continue;
    int a = t->link[l].gpu, b = gpu_by_bus(t, t->gpu[a].host, t->link[l].remote);
    if (b < 0) continue;
    a = root_of(comp, a);
    b = root_of(comp, b);
    if (a != b) comp[a < b ? b : a] = a < b ? a : b;
  }
  for (int i = 0; i < t->ngpu; i++) comp[i] = root_of(comp, i);
}

static void set_level(sc_tp *t, const char *name, const char *kind, double gbps, double alpha) {
  sc_tp_level *l = &t->level[t->nlevels++];
  copy_str(l->name, sizeof l->name, name);
  copy_str(l->kind, sizeof l->kind, kind);
  l->gbps = gbps;
  l->alpha_us = alpha;
}

typedef struct rkey { int host, nnics, nics[8], idx; } rkey;

static int cmp_rkey(const void *pa, const void *pb) {
  const rkey *a = pa, *b = pb;
  if (a->host != b->host) return a->host < b->host ? -1 : 1;
  if (a->nnics != b->nnics) return a->nnics < b->nnics ? -1 : 1;
  for (int k = 0; k < a->nnics; k++) if (a->nics[k] != b->nics[k]) return a->nics[k] < b->nics[k] ? -1 : 1;
  return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Each GPU's rail NIC into rail[ngpu] (-1: none): GPUs with the same nearest NICs take them in
 * turn, in bus order, so two GPUs and two NICs under one switch use one NIC each. 0, or -1 OOM. */
static int rails(const sc_tp *t, int *rail) {
  rkey *k = malloc(((size_t)t->ngpu + 1) * sizeof *k);
  if (!k) return -1;
  for (int i = 0; i < t->ngpu; i++) {
    k[i] = (rkey){t->gpu[i].host, t->gpu[i].nnics, {0}, i};
    memcpy(k[i].nics, t->gpu[i].nics, sizeof k[i].nics);
  }
  qsort(k, (size_t)t->ngpu, sizeof *k, cmp_rkey);
  for (int i = 0, turn = 0; i < t->ngpu; i++) {
    int same = i && k[i].host == k[i - 1].host && k[i].nnics == k[i - 1].nnics &&
               !memcmp(k[i].nics, k[i - 1].nics, (size_t)k[i].nnics * sizeof *k[i].nics);
    turn = same ? turn + 1 : 0;
    rail[k[i].idx] = k[i].nnics ? k[i].nics[turn % k[i].nnics] : -1;
  }
  free(k);
  return 0;
}

/* GB/s per GPU on the network: its rail NIC's speed shared by the GPUs that use it. */
static double net_gbps(const sc_tp *t, const int *rail, int *share) {
  memset(share, 0, ((size_t)t->nnic + 1) * sizeof *share);
  for (int i = 0; i < t->ngpu; i++) if (rail[i] >= 0) share[rail[i]]++;
  double best = 0;
  for (int i = 0; i < t->ngpu; i++) {
    int n = rail[i];
    if (n < 0 || t->nic[n].speed_mbps <= 0) continue;
    double v = t->nic[n].speed_mbps / 8000.0 / share[n];
    if (best == 0 || v < best) best = v;
  }
  return best > 0 ? best : 12.5; /* unknown: a 100 Gb/s port */
}

/* A CPU topology's hosts without NUMA information get one node with every core (before grouping). */
static schedc_status cpu_numa(sc_tp *t) {
  int *cpus = calloc((size_t)t->nhost + 1, sizeof *cpus);
  if (!cpus) return sc_err(SCHEDC_ENOMEM, "out of memory");
  for (int k = 0; k < t->nnuma; k++)
    if (t->numa[k].host >= 0 && t->numa[k].host < t->nhost) cpus[t->numa[k].host] += t->numa[k].cpus;
  for (int h = 0; h < t->nhost; h++)
    if (!cpus[h] && t->host[h].ncores > 0 && sc_tp_add_numa(t, h, 0, 0, t->host[h].ncores) < 0) { free(cpus); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  free(cpus);
  return SCHEDC_OK;
}

schedc_status sc_tp_finish(sc_tp *t) {
  if (t->nhost < 1) return sc_err(SCHEDC_EINVAL, "the topology has no host");
  schedc_status st = t->ngpu ? SCHEDC_OK : cpu_numa(t);
  if (st == SCHEDC_OK) st = sc_tp_group(t);
  if (st != SCHEDC_OK) return st;
  /* a device of a one-NUMA host is on that node */
  for (int i = 0; i < t->ngpu; i++) {
    int h = t->gpu[i].host;
    if (t->gpu[i].at.numa < 0 && t->host_numa[h + 1] - t->host_numa[h] == 1) t->gpu[i].at.numa = t->host_numa[h];
  }
  for (int i = 0; i < t->nnic; i++) {
    int h = t->nic[i].host;
    if (t->nic[i].at.numa < 0 && t->host_numa[h + 1] - t->host_numa[h] == 1) t->nic[i].at.numa = t->host_numa[h];
  }
  for (int i = 0; i < t->ngpu; i++) nearest_nics(t, &t->gpu[i], host_has_rdma(t, t->gpu[i].host));
  nvlink_kinds(t);

  /* ranks: one per GPU (the file's rank numbers when it has them), else one per core */
  free(t->group); free(t->nic_of); free(t->gpu_of);
  t->group = NULL; t->nic_of = t->gpu_of = NULL;
  long n = 0;
  if (t->ngpu) {
    for (int h = 0; h < t->nhost; h++)
      if (t->host_gpu[h] == t->host_gpu[h + 1])
        return sc_err(SCHEDC_EINVAL, "host %d (%s) has no GPU but others have: a GPU topology needs GPUs on every host", h, t->host[h].name);
    n = t->ngpu;
  } else {
    for (int h = 0; h < t->nhost; h++) {
      long c = 0;
      for (int k = t->host_numa[h]; k < t->host_numa[h + 1]; k++) c += t->numa[k].cpus;
      if (!c) return sc_err(SCHEDC_EINVAL, "host %d (%s) has neither GPUs nor cores", h, t->host[h].name);
      n += c;
    }
  }
  if (n > 65536) return sc_err(SCHEDC_EINVAL, "the topology has %ld ranks (at most 65536)", n);
  t->nranks = (int)n;
  t->nic_of = malloc((size_t)n * sizeof *t->nic_of);
  t->gpu_of = malloc((size_t)n * sizeof *t->gpu_of);
  int *comp = malloc(((size_t)t->ngpu + 1) * sizeof *comp), *rail = malloc(((size_t)t->ngpu + 1) * sizeof *rail);
  int *share = malloc(((size_t)t->nnic + 1) * sizeof *share);
  t->group = calloc((size_t)n * SC_TP_MAX_LEVELS, sizeof *t->group);
  st = SCHEDC_OK;
  if (!t->nic_of || !t->gpu_of || !comp || !rail || !share || !t->group) { st = sc_err(SCHEDC_ENOMEM, "out of memory"); goto out; }

  t->nlevels = 0;
  if (t->ngpu) {
    int given = 0;
    for (int i = 0; i < t->ngpu; i++) given += t->gpu[i].rank >= 0;
    if (given && given != t->ngpu) { st = sc_err(SCHEDC_EINVAL, "%d of %d GPUs have a rank number: all or none must", given, t->ngpu); goto out; }
    for (int r = 0; r < n; r++) t->gpu_of[r] = -1;
    for (int i = 0; i < t->ngpu; i++) {
      int r = given ? t->gpu[i].rank : i; /* GPUs are grouped host by host, in bus order (group.c) */
      if (r >= n || t->gpu_of[r] >= 0) { st = sc_err(SCHEDC_EINVAL, "GPU %s: rank %d is out of range [0, %ld) or given twice", t->gpu[i].busid, r, n); goto out; }
      t->gpu_of[r] = i;
    }
    nvlink_components(t, comp);
    if (rails(t, rail)) { st = sc_err(SCHEDC_ENOMEM, "out of memory"); goto out; }
    int all_sw = 1, any_mesh = 0, multi_numa = 0, multi_sw = 0;
    for (int h = 0; h < t->nhost; h++) {
      all_sw &= t->host[h].nvlink == SC_NV_NVSWITCH;
      any_mesh |= t->host[h].nvlink == SC_NV_MESH;
    }
    /* a host's GPUs differ in NUMA node (switch) when one differs from its first GPU's */
    for (int i = 0; i < t->ngpu; i++) {
      const sc_tp_gpu *f = &t->gpu[t->host_gpu[t->gpu[i].host]];
      multi_numa |= t->gpu[i].at.numa != f->at.numa;
      multi_sw |= t->gpu[i].at.sw != f->at.sw || t->gpu[i].at.sw < 0;
    }
    /* NVLink bandwidth: links per GPU x 20 GB/s (NVLink 3/4 per link and direction, derated) */
    double nvl = 0;
    for (int i = 0; i < t->ngpu; i++) {
      int cnt = 0;
      for (int l = t->gpu_link[i]; l < t->gpu_link[i + 1]; l++) cnt += t->link[l].count > 0 ? t->link[l].count : 1;
      if (cnt && (nvl == 0 || cnt * 20.0 < nvl)) nvl = cnt * 20.0;
    }
    double pcie = 0;
    for (int i = 0; i < t->ngpu; i++) if (t->gpu[i].pcie_gbps > 0 && (pcie == 0 || t->gpu[i].pcie_gbps < pcie)) pcie = t->gpu[i].pcie_gbps;
    pcie = pcie > 0 ? pcie * 0.75 : 12; /* achieved: NCCL's 24 GB/s of gen4 x16's 31.5; unknown: gen3 x16 */
    set_level(t, "host", "net", net_gbps(t, rail, share), 8.0);
    if (all_sw) {
      set_level(t, "gpu", "nvlink", nvl > 0 ? nvl : 20, 3.0);
    } else if (any_mesh) {
      set_level(t, "nvlink", "pcie", multi_numa ? 10 : pcie, 2.0);
      set_level(t, "gpu", "nvlink", nvl > 0 ? nvl : 20, 2.0);
    } else {
      if (multi_numa) set_level(t, "numa", "pcie", 10, 2.5); /* across the sockets' interconnect */
      if (multi_sw) set_level(t, "switch", "pcie", pcie, 2.0); /* through the root complex */
      set_level(t, "gpu", "pcie", pcie, 1.5);
    }
    for (int r = 0; r < n; r++) {
      const sc_tp_gpu *g = &t->gpu[t->gpu_of[r]];
      t->nic_of[r] = rail[t->gpu_of[r]];
      for (int l = 0; l < t->nlevels; l++) {
        const char *nm = t->level[l].name;
        int v = !strcmp(nm, "host") ? g->host : !strcmp(nm, "numa") ? g->at.numa
              : !strcmp(nm, "switch") ? (g->at.sw >= 0 ? g->at.sw : -2 - t->gpu_of[r])
              : !strcmp(nm, "nvlink") ? comp[t->gpu_of[r]] : t->gpu_of[r];
        t->group[(size_t)r * SC_TP_MAX_LEVELS + l] = v;
      }
    }
  } else {
    int multi_numa = 0;
    for (int h = 0; h < t->nhost; h++) {
      int c = 0;
      for (int k = t->host_numa[h]; k < t->host_numa[h + 1]; k++) c += t->numa[k].cpus > 0;
      multi_numa |= c > 1;
    }
    double nic = 0;
    for (int i = 0; i < t->nnic; i++) if (t->nic[i].speed_mbps > 0 && (nic == 0 || t->nic[i].speed_mbps / 8000.0 < nic)) nic = t->nic[i].speed_mbps / 8000.0;
    set_level(t, "host", "net", nic > 0 ? nic : 12.5, 8.0);
    if (multi_numa) set_level(t, "numa", "shm", 3.0, 1.5); /* a rank's share of the socket link */
    set_level(t, "core", "shm", 5.0, 1.0);                 /* as SCHEDC_COST_MODEL_INIT's intra */
    /* a rank sends through the first NIC on its NUMA entry, else its host's first */
    int *first_on = malloc(((size_t)t->nnuma + 1) * sizeof *first_on);
    if (!first_on) { st = sc_err(SCHEDC_ENOMEM, "out of memory"); goto out; }
    for (int k = 0; k < t->nnuma; k++) first_on[k] = -1;
    int r = 0;
    for (int h = 0; h < t->nhost; h++) {
      int rdma_only = host_has_rdma(t, h), nic_host = -1; /* as for GPUs: RDMA NICs where the host has them */
      for (int i = t->host_nic[h]; i < t->host_nic[h + 1]; i++) {
        if (rdma_only && t->nic[i].rdma != 1) continue;
        if (nic_host < 0) nic_host = i;
        int k = t->nic[i].at.numa;
        if (k >= t->host_numa[h] && k < t->host_numa[h + 1] && first_on[k] < 0) first_on[k] = i;
      }
      for (int k = t->host_numa[h]; k < t->host_numa[h + 1]; k++)
        for (int c = 0; c < t->numa[k].cpus; c++, r++) {
          t->gpu_of[r] = -1;
          t->nic_of[r] = first_on[k] >= 0 ? first_on[k] : nic_host;
          int *gr = &t->group[(size_t)r * SC_TP_MAX_LEVELS];
          gr[0] = h;
          if (multi_numa) gr[1] = k;
          gr[t->nlevels - 1] = r;
        }
    }
    free(first_on);
  }
out:
  free(comp);
  free(rail);
  free(share);
  return st;
}

uint64_t sc_tp_fingerprint(const sc_tp *t) {
  uint64_t h = 1469598103934665603ull;
#define MIX(v) do { uint64_t x_ = (uint64_t)(v); for (int b_ = 0; b_ < 8; b_++) { h ^= (x_ >> (8 * b_)) & 0xff; h *= 1099511628211ull; } } while (0)
  MIX(t->nranks);
  MIX(t->nlevels);
  for (int l = 0; l < t->nlevels; l++) {
    for (const char *c = t->level[l].name; *c; c++) MIX(*c);
    MIX((int64_t)(t->level[l].gbps * 1000));
    MIX((int64_t)(t->level[l].alpha_us * 1000));
  }
  for (int r = 0; r < t->nranks; r++)
    for (int l = 0; l < t->nlevels; l++) MIX(t->group[(size_t)r * SC_TP_MAX_LEVELS + l]);
#undef MIX
  return h;
}
