/*
 * group.c — the elements of a topology grouped by host (sc_tp_group), so that sc_tp_finish and the
 * writers visit one host's GPUs, NICs and NUMA entries, and one GPU's links, as a contiguous range
 * instead of scanning every host's: a fused dump of 70,000 hosts is derived in linear time (but
 * for one sort of the GPUs). Within a host, GPUs are put in bus order: the order ranks take.
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "topology.h"

typedef struct gkey { int host, idx; char busid[SC_TP_BUSID]; } gkey;

static int cmp_gkey(const void *pa, const void *pb) {
  const gkey *a = pa, *b = pb;
  if (a->host != b->host) return a->host < b->host ? -1 : 1;
  int c = strcmp(a->busid, b->busid);
  if (c) return c;
  return (a->idx > b->idx) - (a->idx < b->idx); /* equal bus ids (hwloc cannot give them; importers refuse them) keep their order */
}

/* Stable counting sort of the n elements (size sz) of arr by key[i] in [0, nkeys), in place (the
 * array keeps its allocation: model.c's appenders imply its capacity): off[nkeys + 1] gets the
 * start of each key's range, map[old index] the new index. 0, or -1 out of memory. */
static int csort(void *arr, int n, size_t sz, const int *key, int nkeys, int *off, int *map) {
  memset(off, 0, ((size_t)nkeys + 1) * sizeof *off);
  for (int i = 0; i < n; i++) off[key[i] + 1]++;
  for (int k = 0; k < nkeys; k++) off[k + 1] += off[k];
  if (!n) return 0;
  char *old = malloc((size_t)n * sz);
  int *next = malloc(((size_t)nkeys + 1) * sizeof *next);
  if (!old || !next) { free(old); free(next); return -1; }
  memcpy(old, arr, (size_t)n * sz);
  memcpy(next, off, ((size_t)nkeys + 1) * sizeof *next);
  for (int i = 0; i < n; i++) {
    int j = next[key[i]]++;
    map[i] = j;
    memcpy((char *)arr + (size_t)j * sz, old + (size_t)i * sz, sz);
  }
  free(next);
  free(old);
  return 0;
}

static int *ints(size_t n) { return malloc((n ? n : 1) * sizeof(int)); }

schedc_status sc_tp_group(sc_tp *t) {
  free(t->host_gpu); free(t->host_nic); free(t->host_numa); free(t->gpu_link);
  t->host_gpu = ints((size_t)t->nhost + 1);
  t->host_nic = ints((size_t)t->nhost + 1);
  t->host_numa = ints((size_t)t->nhost + 1);
  t->gpu_link = ints((size_t)t->ngpu + 1);
  int big = t->ngpu > t->nnic ? t->ngpu : t->nnic;
  if (t->nnuma > big) big = t->nnuma;
  if (t->nlink > big) big = t->nlink;
  int *key = ints((size_t)big), *map = ints((size_t)big), *nmap = ints((size_t)t->nnuma);
  gkey *gk = malloc(((size_t)t->ngpu + 1) * sizeof *gk);
  schedc_status st = SCHEDC_OK;
  if (!t->host_gpu || !t->host_nic || !t->host_numa || !t->gpu_link || !key || !map || !nmap || !gk) {
    st = sc_err(SCHEDC_ENOMEM, "out of memory");
    goto out;
  }
  /* the importers only make elements of hosts they made; checked, as everything below indexes by it */
  for (int i = 0; i < t->ngpu; i++) if (t->gpu[i].host < 0 || t->gpu[i].host >= t->nhost) { st = sc_err(SCHEDC_EINVAL, "GPU %d: no host %d", i, t->gpu[i].host); goto out; }
  for (int i = 0; i < t->nnic; i++) if (t->nic[i].host < 0 || t->nic[i].host >= t->nhost) { st = sc_err(SCHEDC_EINVAL, "NIC %d: no host %d", i, t->nic[i].host); goto out; }
  for (int i = 0; i < t->nnuma; i++) if (t->numa[i].host < 0 || t->numa[i].host >= t->nhost) { st = sc_err(SCHEDC_EINVAL, "NUMA entry %d: no host %d", i, t->numa[i].host); goto out; }
  for (int i = 0; i < t->nlink; i++) if (t->link[i].gpu < 0 || t->link[i].gpu >= t->ngpu) { st = sc_err(SCHEDC_EINVAL, "link %d: no GPU %d", i, t->link[i].gpu); goto out; }

  /* NUMA entries by host; then every place that names one follows it */
  for (int i = 0; i < t->nnuma; i++) key[i] = t->numa[i].host;
  if (csort(t->numa, t->nnuma, sizeof *t->numa, key, t->nhost, t->host_numa, nmap)) goto oom;
  for (int i = 0; i < t->ngpu; i++) if (t->gpu[i].at.numa >= 0 && t->gpu[i].at.numa < t->nnuma) t->gpu[i].at.numa = nmap[t->gpu[i].at.numa];
  for (int i = 0; i < t->nnic; i++) if (t->nic[i].at.numa >= 0 && t->nic[i].at.numa < t->nnuma) t->nic[i].at.numa = nmap[t->nic[i].at.numa];
  /* NICs by host (GPUs' nearest NICs are derived after this) */
  for (int i = 0; i < t->nnic; i++) key[i] = t->nic[i].host;
  if (csort(t->nic, t->nnic, sizeof *t->nic, key, t->nhost, t->host_nic, map)) goto oom;
  /* GPUs by host, then bus id; links follow their GPU */
  for (int i = 0; i < t->ngpu; i++) {
    gk[i].host = t->gpu[i].host;
    gk[i].idx = i;
    memcpy(gk[i].busid, t->gpu[i].busid, SC_TP_BUSID);
  }
  if (t->ngpu) qsort(gk, (size_t)t->ngpu, sizeof *gk, cmp_gkey);
  if (t->ngpu) { /* permuted through a copy, in place (as csort) */
    sc_tp_gpu *old = malloc((size_t)t->ngpu * sizeof *old);
    if (!old) goto oom;
    memcpy(old, t->gpu, (size_t)t->ngpu * sizeof *old);
    for (int j = 0; j < t->ngpu; j++) { t->gpu[j] = old[gk[j].idx]; map[gk[j].idx] = j; }
    free(old);
  }
  memset(t->host_gpu, 0, ((size_t)t->nhost + 1) * sizeof *t->host_gpu);
  for (int i = 0; i < t->ngpu; i++) t->host_gpu[t->gpu[i].host + 1]++;
  for (int h = 0; h < t->nhost; h++) t->host_gpu[h + 1] += t->host_gpu[h];
  for (int i = 0; i < t->nlink; i++) t->link[i].gpu = map[t->link[i].gpu];
  for (int i = 0; i < t->nlink; i++) key[i] = t->link[i].gpu;
  if (csort(t->link, t->nlink, sizeof *t->link, key, t->ngpu, t->gpu_link, map)) goto oom;
  goto out;
oom:
  st = sc_err(SCHEDC_ENOMEM, "out of memory");
out:
  free(key);
  free(map);
  free(nmap);
  free(gk);
  return st;
}
