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
  free(t);
}

/* Grow *arr of *n elements of size sz by one zeroed element: its index or -1. */
static int grow(void **arr, int *n, size_t sz) {
  if (*n >= 1 << 20) return -1; /* a bound no machine reaches: hostile input stops here */
  void *p = realloc(*arr, (size_t)(*n + 1) * sz);
  if (!p) return -1;
  memset((char *)p + (size_t)*n * sz, 0, sz);
  *arr = p;
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

static int cmp_nic_bus(const sc_tp *t, int a, int b) { return strcmp(t->nic[a].busid, t->nic[b].busid); }

/* A GPU's nearest NICs: sharing its PCIe switch; else under its host bridge; else on its NUMA node. */
static void nearest_nics(sc_tp *t, sc_tp_gpu *g) {
  g->nnics = 0;
  for (int tier = 0; tier < 3 && !g->nnics; tier++) {
    for (int i = 0; i < t->nnic && g->nnics < 8; i++) {
      const sc_tp_nic *n = &t->nic[i];
      if (n->host != g->host) continue;
      int near = tier == 0 ? (g->at.sw >= 0 && n->at.sw == g->at.sw)
               : tier == 1 ? (g->at.bridge >= 0 && n->at.bridge == g->at.bridge)
                           : (g->at.numa >= 0 && n->at.numa == g->at.numa);
      if (near) g->nics[g->nnics++] = i;
    }
  }
  for (int i = 1; i < g->nnics; i++) /* bus order (insertion sort: at most 8) */
    for (int j = i; j > 0 && cmp_nic_bus(t, g->nics[j - 1], g->nics[j]) > 0; j--) {
      int x = g->nics[j]; g->nics[j] = g->nics[j - 1]; g->nics[j - 1] = x;
    }
}

static void nvlink_kinds(sc_tp *t) {
  for (int h = 0; h < t->nhost; h++) {
    int sw = 0, gpu = 0, unk = 0, gpus = 0;
    for (int i = 0; i < t->ngpu; i++) gpus += t->gpu[i].host == h;
    for (int i = 0; i < t->nlink; i++) {
      if (t->gpu[t->link[i].gpu].host != h) continue;
      sw += t->link[i].kind == SC_REMOTE_NVSWITCH;
      gpu += t->link[i].kind == SC_REMOTE_GPU;
      unk += t->link[i].kind == SC_REMOTE_UNKNOWN;
    }
    if (sw) t->host[h].nvlink = SC_NV_NVSWITCH;
    else if (gpu) t->host[h].nvlink = SC_NV_MESH;
    else if (unk) t->host[h].nvlink = SC_NV_UNKNOWN;
    else if (!gpus) t->host[h].nvlink = SC_NV_NONE;
    /* else: what the importer said (NONE when it would have seen links, UNKNOWN without NVML) */
  }
}

/* NVLink components among a host's GPUs (GPU-GPU links, union-find): comp[gpu]. */
static void nvlink_components(const sc_tp *t, int *comp) {
  for (int i = 0; i < t->ngpu; i++) comp[i] = i;
  for (int l = 0; l < t->nlink; l++) {
    if (t->link[l].kind != SC_REMOTE_GPU || !t->link[l].remote[0]) continue;
    int a = t->link[l].gpu, b = -1;
    for (int j = 0; j < t->ngpu; j++)
      if (t->gpu[j].host == t->gpu[a].host && !strcmp(t->gpu[j].busid, t->link[l].remote)) b = j;
    if (b < 0) continue;
    while (comp[a] != a) a = comp[a];
    while (comp[b] != b) b = comp[b];
    if (a != b) comp[a < b ? b : a] = a < b ? a : b;
  }
  for (int i = 0; i < t->ngpu; i++) { int r = i; while (comp[r] != r) r = comp[r]; comp[i] = r; }
}

static void set_level(sc_tp *t, const char *name, const char *kind, double gbps, double alpha) {
  sc_tp_level *l = &t->level[t->nlevels++];
  copy_str(l->name, sizeof l->name, name);
  copy_str(l->kind, sizeof l->kind, kind);
  l->gbps = gbps;
  l->alpha_us = alpha;
}

/* The NIC GPU i sends through (its rail): GPUs with the same nearest NICs take them in turn,
 * in bus order, so two GPUs and two NICs under one switch use one NIC each. -1: none. */
static int rail_nic(const sc_tp *t, int i) {
  const sc_tp_gpu *g = &t->gpu[i];
  if (!g->nnics) return -1;
  int k = 0;
  for (int j = 0; j < i; j++)
    k += t->gpu[j].host == g->host && t->gpu[j].nnics == g->nnics && !memcmp(t->gpu[j].nics, g->nics, (size_t)g->nnics * sizeof *g->nics);
  return g->nics[k % g->nnics];
}

/* GB/s per GPU on the network: its rail NIC's speed shared by the GPUs that use it. */
static double net_gbps(const sc_tp *t) {
  double best = 0;
  for (int i = 0; i < t->ngpu; i++) {
    int n = rail_nic(t, i), share = 0;
    if (n < 0 || t->nic[n].speed_mbps <= 0) continue;
    for (int j = 0; j < t->ngpu; j++) share += rail_nic(t, j) == n;
    double v = t->nic[n].speed_mbps / 8000.0 / (share ? share : 1);
    if (best == 0 || v < best) best = v;
  }
  return best > 0 ? best : 12.5; /* unknown: a 100 Gb/s port */
}

schedc_status sc_tp_finish(sc_tp *t) {
  if (t->nhost < 1) return sc_err(SCHEDC_EINVAL, "the topology has no host");
  /* a device of a one-NUMA host is on that node */
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? t->nnic : t->ngpu;
    for (int i = 0; i < n; i++) {
      sc_tp_place *at = pass ? &t->nic[i].at : &t->gpu[i].at;
      int h = pass ? t->nic[i].host : t->gpu[i].host, only = -1, cnt = 0;
      for (int k = 0; k < t->nnuma; k++) if (t->numa[k].host == h) { only = k; cnt++; }
      if (at->numa < 0 && cnt == 1) at->numa = only;
    }
  }
  for (int i = 0; i < t->ngpu; i++) nearest_nics(t, &t->gpu[i]);
  nvlink_kinds(t);

  /* ranks: one per GPU (the file's rank numbers when it has them), else one per core */
  free(t->group); free(t->nic_of); free(t->gpu_of);
  t->group = NULL; t->nic_of = t->gpu_of = NULL;
  int n = 0;
  if (t->ngpu) {
    for (int h = 0; h < t->nhost; h++) {
      int c = 0;
      for (int i = 0; i < t->ngpu; i++) c += t->gpu[i].host == h;
      if (!c) return sc_err(SCHEDC_EINVAL, "host %d (%s) has no GPU but others have: a GPU topology needs GPUs on every host", h, t->host[h].name);
    }
    n = t->ngpu;
  } else {
    for (int h = 0; h < t->nhost; h++) {
      int c = 0;
      for (int k = 0; k < t->nnuma; k++) if (t->numa[k].host == h) c += t->numa[k].cpus;
      if (!c && t->host[h].ncores > 0) { /* no NUMA information: one node with every core */
        if (sc_tp_add_numa(t, h, 0, 0, t->host[h].ncores) < 0) return sc_err(SCHEDC_ENOMEM, "out of memory");
        c = t->host[h].ncores;
      }
      if (!c) return sc_err(SCHEDC_EINVAL, "host %d (%s) has neither GPUs nor cores", h, t->host[h].name);
      n += c;
    }
  }
  if (n > 65536) return sc_err(SCHEDC_EINVAL, "the topology has %d ranks (at most 65536)", n);
  t->nranks = n;
  t->nic_of = malloc((size_t)n * sizeof *t->nic_of);
  t->gpu_of = malloc((size_t)n * sizeof *t->gpu_of);
  int *comp = malloc(((size_t)t->ngpu + 1) * sizeof *comp);
  t->group = calloc((size_t)n * SC_TP_MAX_LEVELS, sizeof *t->group);
  if (!t->nic_of || !t->gpu_of || !comp || !t->group) { free(comp); return sc_err(SCHEDC_ENOMEM, "out of memory"); }

  t->nlevels = 0;
  if (t->ngpu) {
    int given = 0;
    for (int i = 0; i < t->ngpu; i++) given += t->gpu[i].rank >= 0;
    if (given && given != t->ngpu) { free(comp); return sc_err(SCHEDC_EINVAL, "%d of %d GPUs have a rank number: all or none must", given, t->ngpu); }
    for (int r = 0; r < n; r++) t->gpu_of[r] = -1;
    for (int i = 0; i < t->ngpu; i++) {
      int r = given ? t->gpu[i].rank : i; /* importers add GPUs host by host, in bus order */
      if (r >= n || t->gpu_of[r] >= 0) { free(comp); return sc_err(SCHEDC_EINVAL, "GPU %s: rank %d is out of range [0, %d) or given twice", t->gpu[i].busid, r, n); }
      t->gpu_of[r] = i;
    }
    nvlink_components(t, comp);
    int all_sw = 1, any_mesh = 0, multi_numa = 0, multi_sw = 0;
    for (int h = 0; h < t->nhost; h++) {
      all_sw &= t->host[h].nvlink == SC_NV_NVSWITCH;
      any_mesh |= t->host[h].nvlink == SC_NV_MESH;
    }
    for (int i = 0; i < t->ngpu; i++)
      for (int j = 0; j < t->ngpu; j++) {
        if (t->gpu[i].host != t->gpu[j].host) continue;
        multi_numa |= t->gpu[i].at.numa != t->gpu[j].at.numa;
        multi_sw |= t->gpu[i].at.sw != t->gpu[j].at.sw || t->gpu[i].at.sw < 0;
      }
    /* NVLink bandwidth: links per GPU x 20 GB/s (NVLink 3/4 per link and direction, derated) */
    double nvl = 0;
    for (int i = 0; i < t->ngpu; i++) {
      int cnt = 0;
      for (int l = 0; l < t->nlink; l++) if (t->link[l].gpu == i) cnt += t->link[l].count > 0 ? t->link[l].count : 1;
      if (cnt && (nvl == 0 || cnt * 20.0 < nvl)) nvl = cnt * 20.0;
    }
    double pcie = 0;
    for (int i = 0; i < t->ngpu; i++) if (t->gpu[i].pcie_gbps > 0 && (pcie == 0 || t->gpu[i].pcie_gbps < pcie)) pcie = t->gpu[i].pcie_gbps;
    pcie = pcie > 0 ? pcie * 0.75 : 12; /* achieved: NCCL's 24 GB/s of gen4 x16's 31.5; unknown: gen3 x16 */
    set_level(t, "host", "net", net_gbps(t), 8.0);
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
      t->nic_of[r] = rail_nic(t, t->gpu_of[r]);
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
      for (int k = 0; k < t->nnuma; k++) c += t->numa[k].host == h && t->numa[k].cpus > 0;
      multi_numa |= c > 1;
    }
    double nic = 0;
    for (int i = 0; i < t->nnic; i++) if (t->nic[i].speed_mbps > 0 && (nic == 0 || t->nic[i].speed_mbps / 8000.0 < nic)) nic = t->nic[i].speed_mbps / 8000.0;
    set_level(t, "host", "net", nic > 0 ? nic : 12.5, 8.0);
    if (multi_numa) set_level(t, "numa", "shm", 3.0, 1.5); /* a rank's share of the socket link */
    set_level(t, "core", "shm", 5.0, 1.0);                 /* as SCHEDC_COST_MODEL_INIT's intra */
    int r = 0;
    for (int h = 0; h < t->nhost; h++)
      for (int k = 0; k < t->nnuma; k++) {
        if (t->numa[k].host != h) continue;
        int nic_here = -1, nic_host = -1;
        for (int i = 0; i < t->nnic; i++) {
          if (t->nic[i].host != h) continue;
          if (nic_host < 0) nic_host = i;
          if (nic_here < 0 && t->nic[i].at.numa == k) nic_here = i;
        }
        for (int c = 0; c < t->numa[k].cpus; c++, r++) {
          t->gpu_of[r] = -1;
          t->nic_of[r] = nic_here >= 0 ? nic_here : nic_host;
          int *gr = &t->group[(size_t)r * SC_TP_MAX_LEVELS];
          gr[0] = h;
          if (multi_numa) gr[1] = k;
          gr[t->nlevels - 1] = r;
        }
      }
  }
  free(comp);
  return SCHEDC_OK;
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
