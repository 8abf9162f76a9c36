/*
 * nccl.c — import NCCL's topology XML (NCCL_TOPO_FILE inputs and NCCL_TOPO_DUMP_FILE dumps):
 * <system> <cpu numaid affinity [host_hash]> <pci busid class link_speed link_width> ...
 * <gpu dev rank> <nvlink target count tclass/> </gpu> ... <nic> <net name speed/> </nic>.
 * A fused multi-host dump tells hosts apart by the cpu's host_hash; the fffffff:ff:ff.0 target
 * is an NVLink end the VM or container hides; empty link_speed and link_width="0" are unknown.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "topology.h"
#include "xml.h"

enum { E_OTHER, E_SYSTEM, E_CPU, E_PCI, E_GPU, E_NIC, E_NET, E_NVLINK };

typedef struct frame { int kind, host, numa, sw, gpu; char busid[SC_TP_BUSID]; double gbps; } frame;

typedef struct imp {
  sc_tp *t;
  const char *name;
  frame st[SC_XML_MAX_DEPTH + 2];
  int depth, nsw, saw_system;
  char (*hashes)[64];           /* host_hash of each host */
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

static int host_for(imp *im, const char *hash) {
  const char *key = hash ? hash : "";
  for (int h = 0; h < im->t->nhost; h++) if (!strcmp(im->hashes[h], key)) return h;
  void *p = realloc(im->hashes, (size_t)(im->t->nhost + 1) * sizeof *im->hashes);
  if (!p) return -1;
  im->hashes = p;
  char nm[64];
  if (hash) snprintf(nm, sizeof nm, "host %.48s", hash);
  else snprintf(nm, sizeof nm, "host%d", im->t->nhost);
  int h = sc_tp_add_host(im->t, nm);
  if (h < 0) return -1;
  snprintf(im->hashes[h], sizeof im->hashes[h], "%s", key);
  im->t->host[h].nvlink = SC_NV_NONE; /* a dump lists every NVLink: none listed is none */
  return h;
}

static int on_open(void *ctx, const char *name, const sc_xml_attr *a, int na, int line, char *err, size_t cap) {
  imp *im = ctx;
  sc_tp *t = im->t;
  frame *up = &im->st[im->depth], *f = &im->st[im->depth + 1];
  *f = *up;
  f->kind = E_OTHER;
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
    f->kind = E_PCI;
    f->gbps = pcie_gbps(attr(a, na, "link_speed"), attr(a, na, "link_width"));
    if (up->kind == E_CPU) f->sw = (c >> 8) == 0x0604 ? im->nsw++ : -1; /* a switch under the CPU */
    return 0;
  }
  if (!strcmp(name, "gpu")) {
    if (up->kind != E_PCI) return say(im, line, err, cap, "<gpu> must be inside a <pci> element");
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
    f->kind = E_NET;
    return 0;
  }
  return 0; /* c2c, nvs and what later NCCL versions add: not needed */
}

static int on_close(void *ctx, const char *name, int line, char *err, size_t cap) {
  (void)name; (void)line; (void)err; (void)cap;
  imp *im = ctx;
  im->depth--;
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
  free(im->hashes);
  free(im);
  if (rc) return sc_err(SCHEDC_EINVAL, "%s", err);
  if (!t->nhost) return sc_err(SCHEDC_EINVAL, "%s: no <cpu> element: nothing to import", name);
  t->source = "NCCL topology XML";
  schedc_status st = sc_tp_finish(t);
  if (st != SCHEDC_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", schedc_errmsg());
    return sc_err(st, "%s: %s", name, why);
  }
  return SCHEDC_OK;
}
