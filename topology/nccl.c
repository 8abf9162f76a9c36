/*
 * nccl.c — import NCCL's topology XML (NCCL_TOPO_FILE inputs and NCCL_TOPO_DUMP_FILE dumps):
 * <system> <cpu numaid affinity [host_hash]> <pci busid class link_speed link_width> ...
 * <gpu dev rank> <nvlink target count tclass/> </gpu> ... <nic> <net name speed/> </nic>.
 * As NCCL reads them, a <pci> whose class starts "0x03" is a GPU and one starting "0x02" a NIC
 * even without a <gpu> or <nic>/<net> child (the input files clouds publish: NCCL fills those
 * in from the machine it runs on). A fused multi-host dump tells hosts apart by the cpu's
 * host_hash; the fffffff:ff:ff.0 target is an NVLink end the VM or container hides; empty
 * link_speed and link_width="0" are unknown. A bus id twice on one host is refused.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "hash.h"
#include "topology.h"
#include "xml.h"

enum { E_OTHER, E_SYSTEM, E_CPU, E_PCI, E_GPU, E_NIC, E_NET, E_NVLINK };
enum { C_NONE, C_GPU, C_NIC, C_OTHER }; /* a <pci>'s class as NCCL reads it */

/* One open element: where it is, and for a <pci> its class and what its children showed. */
typedef struct frame {
  int kind, host, numa, sw, gpu, cls, line;
  int kids, gpus, nets;          /* child elements; <gpu> children; <net> elements below it */
  char busid[SC_TP_BUSID];
  double gbps;
} frame;

/* A hash index from keys to element numbers (open addressing, linear probing, a power-of-two
 * capacity at most half full): host_hash -> host and (host, bus id) -> the <pci> seen first,
 * so a fused dump of many hosts imports in linear time. Equality is the caller's. */
typedef struct keymap { uint64_t *h; int *v; size_t cap, n; } keymap;

typedef struct pcidev { int host, line; char busid[SC_TP_BUSID]; } pcidev;

typedef struct imp {
  sc_tp *t;
  const char *name;
  frame st[SC_XML_MAX_DEPTH + 2];
  int depth, nsw, saw_system;
  char **hashes; int hcap;       /* host_hash of each host ("" for none), owned; capacity */
  keymap hosts, devs;
  pcidev *dev; int ndev, devcap; /* every <pci> with a bus id, in file order */
  int classless, classless_line; /* <pci> leaves without a class: NCCL fills them from the machine */
} imp;

static const char *attr(const sc_xml_attr *a, int n, const char *k) {
  for (int i = 0; i < n; i++) if (!strcmp(a[i].name, k)) return a[i].value;
  return NULL;
}

static int say(imp *im, int line, char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int say(imp *im, int line, char *err, size_t cap, const char *fmt, ...) {
  int n = snprintf(err, cap, "%s:%d: ", im->name, line);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < cap) vsnprintf(err + n, cap - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

/* A decimal or 0x integer in [lo, hi]; 0 and *out, or -1. */
static int to_long(const char *s, long lo, long hi, long *out) {
  if (!s || !*s) return -1;
  char *e;
  long v = strtol(s, &e, 0);
  if (*e || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* "16 GT/s PCIe" / "16.0 GT/s PCIe" x width lanes -> GB/s of data (128b/130b from 8 GT/s on). */
static double pcie_gbps(const char *speed, const char *width) {
  if (!speed || !width) return 0;
  double gt = strtod(speed, NULL);
  long w;
  if (!(gt > 0 && gt <= 1000) || to_long(width, 0, 64, &w) || w == 0) return 0; /* NaN, inf, nonsense: unknown */
  double per_lane = gt < 8 ? gt * 0.8 / 8 : gt * 128.0 / 130 / 8;
  return per_lane * (double)w;
}

/* Count the set bits of a hex mask "0000ffff,ffffffff" (NCCL's affinity). */
static int mask_bits(const char *m) {
  int n = 0;
  for (; m && *m; m++) {
    int v = *m >= '0' && *m <= '9' ? *m - '0' : (*m | 32) >= 'a' && (*m | 32) <= 'f' ? (*m | 32) - 'a' + 10 : 0;
    n += __builtin_popcount((unsigned)v);
  }
  return n;
}

/* The element stored under hash h for which same(ctx, element) holds, or -1. */
static int keymap_find(const keymap *x, uint64_t h, int (*same)(const imp *, int, const void *), const imp *im, const void *key) {
  if (!x->cap) return -1;
  for (size_t i = h & (x->cap - 1);; i = (i + 1) & (x->cap - 1)) {
    if (x->v[i] < 0) return -1;
    if (x->h[i] == h && same(im, x->v[i], key)) return x->v[i];
  }
}

/* Store element v under hash h: 0, or -1 out of memory. */
static int keymap_add(keymap *x, uint64_t h, int v) {
  if (2 * (x->n + 1) > x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 64;
    uint64_t *nh = malloc(cap * sizeof *nh);
    int *nv = malloc(cap * sizeof *nv);
    if (!nh || !nv) { free(nh); free(nv); return -1; }
    for (size_t i = 0; i < cap; i++) nv[i] = -1;
    for (size_t k = 0; k < x->cap; k++) {
      if (x->v[k] < 0) continue;
      size_t i = x->h[k] & (cap - 1);
      while (nv[i] >= 0) i = (i + 1) & (cap - 1);
      nh[i] = x->h[k];
      nv[i] = x->v[k];
    }
    free(x->h);
    free(x->v);
    x->h = nh;
    x->v = nv;
    x->cap = cap;
  }
  size_t i = h & (x->cap - 1);
  while (x->v[i] >= 0) i = (i + 1) & (x->cap - 1);
  x->h[i] = h;
  x->v[i] = v;
  x->n++;
  return 0;
}

/* *arr (a void * to an array of capacity *cap) made to hold n elements of size sz, doubling: 0,
 * or -1 out of memory (the array unchanged). */
static int grow_to(void *arr, int *cap, int n, size_t sz) {
  if (n <= *cap) return 0;
  int c = *cap ? 2 * *cap : 64;
  while (c < n) c *= 2;
  void *p = realloc(*(void **)arr, (size_t)c * sz);
  if (!p) return -1;
  *(void **)arr = p;
  *cap = c;
  return 0;
}

static int same_host(const imp *im, int h, const void *key) { return !strcmp(im->hashes[h], key); }

static int same_dev(const imp *im, int d, const void *key) {
  const pcidev *k = key;
  return im->dev[d].host == k->host && !strcmp(im->dev[d].busid, k->busid);
}

static int host_for(imp *im, const char *hash) {
  const char *key = hash ? hash : "";
  uint64_t hh = sc_fnv_str(SC_FNV_INIT, key);
  int h = keymap_find(&im->hosts, hh, same_host, im, key);
  if (h >= 0) return h;
  if (grow_to(&im->hashes, &im->hcap, im->t->nhost + 1, sizeof *im->hashes)) return -1;
  size_t klen = strlen(key) + 1;
  char *copy = malloc(klen);
  if (!copy) return -1;
  memcpy(copy, key, klen);
  char nm[64];
  if (hash) snprintf(nm, sizeof nm, "host %.48s", hash);
  else snprintf(nm, sizeof nm, "host%d", im->t->nhost);
  h = sc_tp_add_host(im->t, nm);
  if (h < 0 || keymap_add(&im->hosts, hh, h)) { free(copy); return -1; }
  im->hashes[h] = copy;
  im->t->host[h].nvlink = SC_NV_NONE; /* a dump lists every NVLink: none listed is none */
  return h;
}

/* A <pci busid> met on host h at line: -1 (message in err) when the host already has it. NCCL
 * looks a device up by its bus id and takes the first <pci> that has it, so a second one is
 * silently never used; which of the two places the user meant cannot be known: refused. */
static int note_dev(imp *im, int h, const char *busid, int line, char *err, size_t cap) {
  pcidev k = {h, line, ""};
  memcpy(k.busid, busid, SC_TP_BUSID);
  uint64_t hh = sc_fnv(sc_fnv_str(SC_FNV_INIT, busid), &h, sizeof h);
  int d = keymap_find(&im->devs, hh, same_dev, im, &k);
  if (d >= 0) {
    const char *hash = im->hashes[h];
    return say(im, line, err, cap, "<pci busid=\"%s\"> again: line %d has this bus id on the same host%s%s%s (a bus id names one "
               "device; NCCL would use the first and ignore this one)", busid, im->dev[d].line,
               hash[0] ? " (host_hash " : "", hash, hash[0] ? ")" : "");
  }
  if (grow_to(&im->dev, &im->devcap, im->ndev + 1, sizeof *im->dev)) return say(im, line, err, cap, "out of memory");
  im->dev[im->ndev] = k;
  if (keymap_add(&im->devs, hh, im->ndev)) return say(im, line, err, cap, "out of memory");
  im->ndev++;
  return 0;
}

static int on_open(void *ctx, const char *name, const sc_xml_attr *a, int na, int line, char *err, size_t cap) {
  imp *im = ctx;
  sc_tp *t = im->t;
  frame *up = &im->st[im->depth], *f = &im->st[im->depth + 1];
  *f = *up;
  f->kind = E_OTHER;
  f->cls = C_NONE;
  f->line = line;
  f->kids = f->gpus = f->nets = 0;
  up->kids++;
  im->depth++;
  if (im->depth == 1) {
    if (strcmp(name, "system")) return say(im, line, err, cap, "the root element is <%s>; NCCL topology XML starts with <system>", name);
    f->kind = E_SYSTEM;
    im->saw_system = 1;
    return 0;
  }
  if (!strcmp(name, "cpu")) {
    if (up->kind != E_SYSTEM) return say(im, line, err, cap, "<cpu> must be directly inside <system>");
    const char *hh = attr(a, na, "host_hash");
    int h = host_for(im, hh);
    if (h < 0) return say(im, line, err, cap, "out of memory");
    long id = 0;
    const char *ns = attr(a, na, "numaid");
    if (ns && to_long(ns, -1, 1 << 20, &id)) return say(im, line, err, cap, "<cpu numaid=\"%s\">: not a NUMA node number", ns);
    int cpus = mask_bits(attr(a, na, "affinity"));
    f->kind = E_CPU;
    f->host = h;
    f->numa = sc_tp_add_numa(t, h, (int)id, -1, cpus);
    if (f->numa < 0) return say(im, line, err, cap, "out of memory");
    f->sw = -1;
    f->busid[0] = 0;
    t->host[h].ncores += cpus;
    t->host[h].npus += cpus;
    t->host[h].npackages++;
    return 0;
  }
  if (!strcmp(name, "pci")) {
    if (up->kind != E_CPU && up->kind != E_PCI) return say(im, line, err, cap, "<pci> must be inside <cpu> or <pci>");
    const char *b = attr(a, na, "busid");
    int k = sc_tp_busid(b, f->busid);
    if (k == 0) return say(im, line, err, cap, "<pci busid=\"%s\">: not a PCI bus id dddd:bb:dd.f", b ? b : "");
    const char *cls = attr(a, na, "class");
    long c = 0;
    if (cls && to_long(cls, 0, 0xffffff, &c)) return say(im, line, err, cap, "<pci class=\"%s\">: not a PCI class number", cls);
    /* NCCL compares the text's start: "0x03..." a GPU (display controller), "0x02..." a NIC */
    f->cls = !cls ? C_NONE : !strncmp(cls, "0x03", 4) ? C_GPU : !strncmp(cls, "0x02", 4) ? C_NIC : C_OTHER;
    if (k == 1 && note_dev(im, f->host, f->busid, line, err, cap)) return -1;
    f->kind = E_PCI;
    f->gbps = pcie_gbps(attr(a, na, "link_speed"), attr(a, na, "link_width"));
    if (up->kind == E_CPU) f->sw = (c >> 8) == 0x0604 ? im->nsw++ : -1; /* a switch under the CPU */
    return 0;
  }
  if (!strcmp(name, "gpu")) {
    if (up->kind != E_PCI) return say(im, line, err, cap, "<gpu> must be inside a <pci> element");
    if (up->gpus++) return say(im, line, err, cap, "a second <gpu> in <pci busid=\"%s\"> (line %d): one GPU per bus id", up->busid, up->line);
    int g = sc_tp_add_gpu(t, up->host, up->busid);
    if (g < 0) return say(im, line, err, cap, "out of memory");
    t->gpu[g].at = (sc_tp_place){up->numa, up->sw, -1};
    t->gpu[g].pcie_gbps = up->gbps;
    const char *rk = attr(a, na, "rank");
    long r;
    if (rk) {
      if (to_long(rk, 0, 65535, &r)) return say(im, line, err, cap, "<gpu rank=\"%s\">: not a rank from 0 to 65535", rk);
      t->gpu[g].rank = (int)r;
    }
    f->kind = E_GPU;
    f->gpu = g;
    return 0;
  }
  if (!strcmp(name, "nvlink")) {
    if (up->kind != E_GPU) return say(im, line, err, cap, "<nvlink> must be inside <gpu>");
    const char *tg = attr(a, na, "target"), *cnt = attr(a, na, "count"), *tc = attr(a, na, "tclass");
    char rb[SC_TP_BUSID] = "";
    int k = sc_tp_busid(tg, rb);
    if (k == 0) return say(im, line, err, cap, "<nvlink target=\"%s\">: not a PCI bus id", tg ? tg : "");
    long n = 1, c = -1;
    if (cnt && to_long(cnt, 0, 64, &n)) return say(im, line, err, cap, "<nvlink count=\"%s\">: not a link count from 0 to 64", cnt);
    if (tc && to_long(tc, 0, 0xffffff, &c)) return say(im, line, err, cap, "<nvlink tclass=\"%s\">: not a PCI class number", tc);
    /* NCCL: 0x068000 is an NVSwitch, 0x03xxxx a GPU; no class: a GPU if it is one of ours */
    sc_remote kind = c == 0x068000 ? SC_REMOTE_NVSWITCH : (c >> 16) == 0x03 ? SC_REMOTE_GPU : SC_REMOTE_UNKNOWN;
    if (c < 0 && k == 1) kind = SC_REMOTE_GPU;
    /* a GPU's link to itself (Azure's NC A100 v4 files show 12): the VM hides the far end */
    if (k == 1 && !strcmp(rb, t->gpu[up->gpu].busid)) { rb[0] = 0; kind = SC_REMOTE_UNKNOWN; }
    if (n > 0 && sc_tp_add_link(t, up->gpu, rb, kind, (int)n) < 0) return say(im, line, err, cap, "out of memory");
    f->kind = E_NVLINK;
    return 0;
  }
  if (!strcmp(name, "nic")) {
    if (up->kind != E_PCI && up->kind != E_CPU) return say(im, line, err, cap, "<nic> must be inside <pci> or <cpu>");
    f->kind = E_NIC;
    if (up->kind == E_CPU) f->busid[0] = 0;
    return 0;
  }
  if (!strcmp(name, "net")) {
    if (up->kind != E_NIC) return say(im, line, err, cap, "<net> must be inside <nic>");
    const char *nm = attr(a, na, "name"), *sp = attr(a, na, "speed");
    long speed = 0;
    if (sp && *sp && to_long(sp, 0, 1L << 40, &speed)) return say(im, line, err, cap, "<net speed=\"%s\">: not a speed in Mb/s", sp);
    int i = sc_tp_add_nic(t, up->host, up->busid, nm ? nm : "");
    if (i < 0) return say(im, line, err, cap, "out of memory");
    t->nic[i].speed_mbps = speed;
    t->nic[i].at = (sc_tp_place){up->numa, up->busid[0] ? up->sw : -1, -1};
    for (int d = im->depth - 1; d > 0 && im->st[d].kind != E_CPU; d--) im->st[d].nets++; /* its <nic> and <pci> */
    f->kind = E_NET;
    return 0;
  }
  return 0; /* c2c, nvs and what later NCCL versions add: not needed */
}

/* A <pci> closes: one of GPU class without <gpu>, or of NIC class without <net>, is that device
 * (NCCL fills it in from the machine); a class-less leaf is counted for the message below. */
static int on_close(void *ctx, const char *name, int line, char *err, size_t cap) {
  (void)name;
  imp *im = ctx;
  sc_tp *t = im->t;
  frame *f = &im->st[im->depth];
  im->depth--;
  if (f->kind != E_PCI || !f->busid[0]) return 0;
  if (f->cls == C_GPU && !f->gpus) {
    int g = sc_tp_add_gpu(t, f->host, f->busid);
    if (g < 0) return say(im, line, err, cap, "out of memory");
    t->gpu[g].at = (sc_tp_place){f->numa, f->sw, -1};
    t->gpu[g].pcie_gbps = f->gbps;
    if (t->host[f->host].nvlink == SC_NV_NONE) t->host[f->host].nvlink = SC_NV_UNKNOWN; /* NCCL asks NVML at run time */
  } else if (f->cls == C_NIC && !f->nets) {
    int i = sc_tp_add_nic(t, f->host, f->busid, f->busid); /* no <net name>: named by its bus id, as hwloc's */
    if (i < 0) return say(im, line, err, cap, "out of memory");
    t->nic[i].at = (sc_tp_place){f->numa, f->sw, -1};
  } else if (f->cls == C_NONE && !f->kids && !im->classless++) {
    im->classless_line = f->line;
  }
  return 0;
}

schedc_status sc_tp_import_nccl(sc_tp *t, const char *name, const char *text, size_t len) {
  imp *im = calloc(1, sizeof *im);
  char err[512];
  if (!im) return sc_err(SCHEDC_ENOMEM, "out of memory");
  im->t = t;
  im->name = name;
  sc_xml_cb cb = {im, on_open, on_close};
  int rc = sc_xml_parse(name, text, len, &cb, err, sizeof err);
  int classless = im->classless, classless_line = im->classless_line;
  for (int h = 0; h < t->nhost && im->hashes; h++) free(im->hashes[h]);
  free(im->hashes);
  free(im->hosts.h); free(im->hosts.v); free(im->devs.h); free(im->devs.v);
  free(im->dev);
  free(im);
  if (rc) return sc_err(SCHEDC_EINVAL, "%s", err);
  if (!t->nhost) return sc_err(SCHEDC_EINVAL, "%s: no <cpu> element: nothing to import", name);
  if (!t->ngpu && classless) /* AWS's first p5.48xlarge file: switches and devices with bus ids only */
    return sc_err(SCHEDC_EINVAL, "%s:%d: no GPU, and %d <pci> device%s without a class: NCCL learns from the machine it runs "
                  "on which are GPUs and NICs; give each GPU class=\"0x030200\" and each NIC class=\"0x020000\" (Ethernet, "
                  "EFA) or \"0x020700\" (InfiniBand) to import the file", name, classless_line, classless, classless == 1 ? "" : "s");
  t->source = "NCCL topology XML";
  schedc_status st = sc_tp_finish(t);
  if (st != SCHEDC_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", schedc_errmsg());
    return sc_err(st, "%s: %s", name, why);
  }
  return SCHEDC_OK;
}
