/*
 * write.c — the three forms of a finished topology: the readable summary of `schedc topo`, the
 * JSON of `--json` (docs/topology.md gives its shape) and schedc's topology file (a Lua table:
 * levels, ranks with their group at each level, and the hosts' description), which `topo`,
 * the cost model and `schedc tune` read.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"

typedef struct sb { char *s; size_t len, cap; int oom; } sb;

static void put(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) { b->oom = 1; return; }
    if (b->s && b->len + (size_t)n < b->cap) { b->len += (size_t)n; return; }
    size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)n;
    char *p = realloc(b->s, nc);
    if (!p) { b->oom = 1; return; }
    b->s = p;
    b->cap = nc;
  }
}

static char *done(sb *b) {
  if (b->oom || !b->s) { free(b->s); return NULL; }
  return b->s;
}

static const char *nvkind(sc_nvkind k) {
  return k == SC_NV_NVSWITCH ? "nvswitch" : k == SC_NV_MESH ? "mesh" : k == SC_NV_NONE ? "none" : "unknown";
}

/* A string as a JSON / Lua literal (both accept this escaping for the names we meet). */
static void quoted(sb *b, const char *s) {
  put(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') put(b, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) put(b, "\\u%04x", c); /* JSON; the Lua writer avoids these */
    else put(b, "%c", c);
  }
  put(b, "\"");
}

static void lua_str(sb *b, const char *s) {
  put(b, "\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') put(b, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f) put(b, "\\%03u", c);
    else put(b, "%c", c);
  }
  put(b, "\"");
}

static int numa_id(const sc_tp *t, int k) { return k >= 0 ? t->numa[k].id : -1; }

static int cmp_int(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

/* Host h's NUMA nodes: its entries' distinct ids (an entry is a node's part of one package); -1 OOM. */
static int numa_nodes(const sc_tp *t, int h) {
  int n = t->host_numa[h + 1] - t->host_numa[h], d = 0;
  int *id = malloc(((size_t)n + 1) * sizeof *id);
  if (!id) return -1;
  for (int k = 0; k < n; k++) id[k] = t->numa[t->host_numa[h] + k].id;
  qsort(id, (size_t)n, sizeof *id, cmp_int);
  for (int k = 0; k < n; k++) d += !k || id[k] != id[k - 1];
  free(id);
  return d;
}

char *sc_tp_summary(const sc_tp *t) {
  sb b = {0};
  for (int h = 0; h < t->nhost; h++) {
    const sc_tp_host *H = &t->host[h];
    int nn = numa_nodes(t, h), ng = t->host_gpu[h + 1] - t->host_gpu[h], nc = t->host_nic[h + 1] - t->host_nic[h];
    if (nn < 0) { b.oom = 1; break; }
    put(&b, "host %d (%s): %d package%s, %d NUMA node%s, %d core%s", h, H->name, H->npackages, H->npackages == 1 ? "" : "s",
        nn, nn == 1 ? "" : "s", H->ncores, H->ncores == 1 ? "" : "s");
    if (H->npus) put(&b, " (%d PU%s)", H->npus, H->npus == 1 ? "" : "s");
    put(&b, ", %d GPU%s, %d NIC%s, NVLink %s\n", ng, ng == 1 ? "" : "s", nc, nc == 1 ? "" : "s", nvkind(H->nvlink));
    if (H->caches[0]) put(&b, "  caches: %s\n", H->caches);
    for (int k = t->host_numa[h]; k < t->host_numa[h + 1]; k++) {
      put(&b, "  NUMA node %d", t->numa[k].id);
      if (t->numa[k].package >= 0) put(&b, " (package %d)", t->numa[k].package);
      put(&b, ": %d core%s\n", t->numa[k].cpus, t->numa[k].cpus == 1 ? "" : "s");
    }
    for (int i = t->host_gpu[h]; i < t->host_gpu[h + 1]; i++) {
      const sc_tp_gpu *g = &t->gpu[i];
      put(&b, "  GPU %s: NUMA %d, %s", g->busid, numa_id(t, g->at.numa), g->at.sw >= 0 ? "behind a PCIe switch" : "no PCIe switch");
      if (g->nnics) {
        put(&b, ", nearest NIC");
        for (int j = 0; j < g->nnics; j++) put(&b, "%s %s", j ? "," : "", t->nic[g->nics[j]].name);
      }
      int links = 0;
      for (int l = t->gpu_link[i]; l < t->gpu_link[i + 1]; l++) links += t->link[l].count;
      if (links) put(&b, ", %d NVLink%s", links, links == 1 ? "" : "s");
      put(&b, "\n");
    }
    for (int i = t->host_nic[h]; i < t->host_nic[h + 1]; i++) {
      const sc_tp_nic *n = &t->nic[i];
      put(&b, "  NIC %s", n->name);
      if (strcmp(n->name, n->busid)) put(&b, " %s", n->busid[0] ? n->busid : "(no PCI device)"); /* unnamed: its bus id is its name */
      put(&b, ": NUMA %d", numa_id(t, n->at.numa));
      if (n->speed_mbps) put(&b, ", %ld Mb/s", n->speed_mbps);
      if (n->rdma >= 0) put(&b, ", %s", n->rdma ? "RDMA" : "no RDMA");
      put(&b, "\n");
    }
  }
  put(&b, "ranks: %d (one per %s); levels, outermost first:", t->nranks, t->ngpu ? "GPU" : "core");
  for (int l = 0; l < t->nlevels; l++)
    put(&b, "%s %s (%s, %g GB/s, %g us)", l ? "," : "", t->level[l].name, t->level[l].kind, t->level[l].gbps, t->level[l].alpha_us);
  put(&b, "\n");
  return done(&b);
}

char *sc_tp_json(const sc_tp *t) {
  sb b = {0};
  put(&b, "{\"source\": ");
  quoted(&b, t->source ? t->source : "");
  put(&b, ", \"hosts\": [");
  for (int h = 0; h < t->nhost; h++) {
    const sc_tp_host *H = &t->host[h];
    put(&b, "%s\n  {\"name\": ", h ? "," : "");
    quoted(&b, H->name);
    put(&b, ", \"packages\": %d, \"cores\": %d, \"pus\": %d, \"numa\": [", H->npackages, H->ncores, H->npus);
    int first = 1;
    for (int k = t->host_numa[h]; k < t->host_numa[h + 1]; k++) {
      put(&b, "%s{\"id\": %d, \"package\": %d, \"cpus\": %d}", first ? "" : ", ", t->numa[k].id, t->numa[k].package, t->numa[k].cpus);
      first = 0;
    }
    put(&b, "],\n   \"gpus\": [");
    first = 1;
    for (int i = t->host_gpu[h]; i < t->host_gpu[h + 1]; i++) {
      const sc_tp_gpu *g = &t->gpu[i];
      put(&b, "%s{\"busid\": \"%s\", \"numa\": %d, \"nics\": [", first ? "" : ", ", g->busid, numa_id(t, g->at.numa));
      for (int j = 0; j < g->nnics; j++) {
        put(&b, "%s", j ? ", " : "");
        quoted(&b, t->nic[g->nics[j]].busid[0] ? t->nic[g->nics[j]].busid : t->nic[g->nics[j]].name);
      }
      put(&b, "]}");
      first = 0;
    }
    put(&b, "],\n   \"nics\": [");
    first = 1;
    for (int i = t->host_nic[h]; i < t->host_nic[h + 1]; i++) {
      const sc_tp_nic *n = &t->nic[i];
      put(&b, "%s{\"busid\": \"%s\", \"name\": ", first ? "" : ", ", n->busid);
      quoted(&b, n->name);
      put(&b, ", \"speed_mbps\": %ld, \"numa\": %d, \"rdma\": %s}", n->speed_mbps, numa_id(t, n->at.numa),
          n->rdma < 0 ? "null" : n->rdma ? "true" : "false");
      first = 0;
    }
    put(&b, "],\n   \"nvlink\": \"%s\"}", nvkind(H->nvlink));
  }
  put(&b, "\n], \"ranks\": %d, \"levels\": [", t->nranks);
  for (int l = 0; l < t->nlevels; l++)
    put(&b, "%s{\"name\": \"%s\", \"kind\": \"%s\", \"gbps\": %g, \"alpha_us\": %g}", l ? ", " : "", t->level[l].name,
        t->level[l].kind, t->level[l].gbps, t->level[l].alpha_us);
  put(&b, "], \"fingerprint\": \"%016llx\"}\n", (unsigned long long)sc_tp_fingerprint(t));
  return done(&b);
}

char *sc_tp_lua(const sc_tp *t) {
  sb b = {0};
  put(&b, "-- schedc topology file (docs/topology.md), written by `schedc topo` from %s.\n"
          "-- levels: outermost first; ranks whose groups first differ at a level talk over its link.\n"
          "-- The numbers are predictions from public figures unless measured (docs/topology.md).\n"
          "return {\n  version = 2,\n  fingerprint = \"%016llx\",\n  levels = {\n",
      t->source ? t->source : "an unknown source", (unsigned long long)sc_tp_fingerprint(t));
  for (int l = 0; l < t->nlevels; l++)
    put(&b, "    { name = \"%s\", kind = \"%s\", gbps = %.17g, alpha_us = %.17g },\n", t->level[l].name, t->level[l].kind,
        t->level[l].gbps, t->level[l].alpha_us);
  put(&b, "  },\n");
  if (t->ngpu) /* the cost model's device numbers: HBM3 (docs/topology.md "Predicted numbers") */
    put(&b, "  reduce_gbps = 1000, copy_gbps = 1300, call_us = 5,\n");
  else { /* a rank per core: the cores are the CPU time (cost model) */
    int cores = 0;
    for (int h = 0; h < t->nhost; h++) if (t->host[h].ncores > cores) cores = t->host[h].ncores;
    put(&b, "  cores_per_node = %d,\n", cores);
  }
  put(&b, "  ranks = {\n");
  for (int r = 0; r < t->nranks; r++) {
    put(&b, "    {");
    for (int l = 0; l < t->nlevels; l++)
      put(&b, "%s %s = %d", l ? "," : "", t->level[l].name, t->group[(size_t)r * SC_TP_MAX_LEVELS + l]);
    if (t->gpu_of[r] >= 0) put(&b, ", busid = \"%s\"", t->gpu[t->gpu_of[r]].busid);
    if (t->nic_of[r] >= 0) { put(&b, ", nic = "); lua_str(&b, t->nic[t->nic_of[r]].name); }
    put(&b, " }, -- rank %d\n", r);
  }
  put(&b, "  },\n  hosts = {\n");
  for (int h = 0; h < t->nhost; h++) {
    const sc_tp_host *H = &t->host[h];
    put(&b, "    { name = ");
    lua_str(&b, H->name);
    put(&b, ", packages = %d, cores = %d, pus = %d, nvlink = \"%s\", caches = ", H->npackages, H->ncores, H->npus, nvkind(H->nvlink));
    lua_str(&b, H->caches);
    put(&b, ",\n      numa = {");
    for (int k = t->host_numa[h]; k < t->host_numa[h + 1]; k++)
      put(&b, " { id = %d, package = %d, cpus = %d },", t->numa[k].id, t->numa[k].package, t->numa[k].cpus);
    put(&b, " },\n      gpus = {");
    for (int i = t->host_gpu[h]; i < t->host_gpu[h + 1]; i++) {
      const sc_tp_gpu *g = &t->gpu[i];
      put(&b, "\n        { busid = \"%s\", numa = %d, switch = %d, nics = {", g->busid, numa_id(t, g->at.numa), g->at.sw);
      for (int j = 0; j < g->nnics; j++) { lua_str(&b, t->nic[g->nics[j]].name); put(&b, ","); }
      put(&b, "} },");
    }
    put(&b, " },\n      nics = {");
    for (int i = t->host_nic[h]; i < t->host_nic[h + 1]; i++) {
      const sc_tp_nic *n = &t->nic[i];
      put(&b, "\n        { name = ");
      lua_str(&b, n->name);
      put(&b, ", busid = \"%s\", speed_mbps = %ld, numa = %d },", n->busid, n->speed_mbps, numa_id(t, n->at.numa));
    }
    put(&b, " } },\n");
  }
  put(&b, "  },\n}\n");
  return done(&b);
}
