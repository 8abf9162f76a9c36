/*
 * hwloc.c — the topology from hwloc (Debian's libhwloc-dev, an optional build dependency like
 * MPI): this machine, an hwloc XML file (`lstopo --whole-io --output-format xml`, read by
 * hwloc's own loader after xml.c has checked it is well-formed, so bad XML gets its line), or a
 * synthetic description. Packages, NUMA nodes with their cores, caches, and the PCIe tree's
 * GPUs (NVIDIA, class 0x0300/0x0302) and NICs (class 0x0200/0x0207) with their switch and bridge.
 */
#define _GNU_SOURCE /* pipe2 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dl.h"
#include "err.h"
#include "fileio.h"
#include "topology.h"
#include "xml.h"

#ifndef SCHEDC_HAVE_HWLOC

static schedc_status none(void) {
  return sc_err(SCHEDC_EUNAVAIL, "topology discovery is unavailable: this schedc was built without hwloc "
                                 "(install libhwloc-dev and rebuild); `schedc topo --from FILE` reads NCCL XML");
}
schedc_status sc_tp_discover(sc_tp *t) { (void)t; return none(); }
schedc_status sc_tp_import_hwloc_xml(sc_tp *t, const char *path) { (void)t; (void)path; return none(); }
schedc_status sc_tp_synthetic(sc_tp *t, const char *desc) { (void)t; (void)desc; return none(); }
void sc_tp_hwloc_probe(sc_probe *p) {
  snprintf(p->why, sizeof p->why, "this build of schedc has no hwloc (install libhwloc-dev and rebuild): no "
           "`schedc topo` discovery");
}

#else

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

static int count_inside(hwloc_topology_t topo, hwloc_const_cpuset_t set, hwloc_obj_type_t type) {
  int n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, type);
  return n < 0 ? 0 : n;
}

/* The NUMA node (index into t->numa, from first) of a non-I/O object's nodeset. */
static int numa_of(const sc_tp *t, int first, hwloc_topology_t topo, hwloc_obj_t o) {
  hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, o);
  if (!anc || !anc->nodeset) return -1;
  for (int k = first; k < t->nnuma; k++)
    if (hwloc_bitmap_isset(anc->nodeset, (unsigned)t->numa[k].id)) return k;
  return -1;
}

/* Where a PCI device sits: the bridge below the host bridge on its path (its switch, or the
 * root port it hangs from) and the host bridge. Ids: hwloc's gp_index, unique per topology. */
static sc_tp_place place_of(const sc_tp *t, int first, hwloc_topology_t topo, hwloc_obj_t o) {
  sc_tp_place at = {numa_of(t, first, topo, o), -1, -1};
  hwloc_obj_t below = NULL;
  for (hwloc_obj_t p = o->parent; p; below = p, p = p->parent) {
    if (p->type != HWLOC_OBJ_BRIDGE) break;
    if (p->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
      at.bridge = (int)(p->gp_index & 0x3fffffff);
      if (below && below != o) at.sw = (int)(below->gp_index & 0x3fffffff);
      break;
    }
  }
  return at;
}

static void fmt_busid(hwloc_obj_t o, char out[SC_TP_BUSID]) {
  snprintf(out, SC_TP_BUSID, "%04x:%02x:%02x.%x", o->attr->pcidev.domain & 0xffff, o->attr->pcidev.bus,
           o->attr->pcidev.dev & 0x1f, o->attr->pcidev.func & 7);
}

static void caches(hwloc_topology_t topo, char *out, size_t cap) {
  static const struct { hwloc_obj_type_t type; const char *name; } kinds[] = {
      {HWLOC_OBJ_L3CACHE, "L3"}, {HWLOC_OBJ_L2CACHE, "L2"}, {HWLOC_OBJ_L1CACHE, "L1d"}};
  out[0] = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    int n = hwloc_get_nbobjs_by_type(topo, kinds[i].type);
    hwloc_obj_t c = hwloc_get_obj_by_type(topo, kinds[i].type, 0);
    if (n <= 0 || !c) continue;
    unsigned long long kib = c->attr->cache.size / 1024;
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "%s%s %llu%s x%d", len ? ", " : "", kinds[i].name,
             kib >= 1024 && kib % 1024 == 0 ? kib / 1024 : kib, kib >= 1024 && kib % 1024 == 0 ? "MiB" : "KiB", n);
  }
}

/* A NIC's name (its OpenFabrics device, else its network interface), whether it does RDMA (it
 * has an OpenFabrics device: InfiniBand, RoCE, AWS's EFA; a plain Ethernet NIC such as ENA has a
 * network interface only) and Linux's speed for it. */
static void nic_name(hwloc_obj_t pci, char *name, size_t cap, int *rdma, long *mbps, int live) {
  name[0] = 0;
  *mbps = 0;
  *rdma = 0;
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
    if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) { snprintf(name, cap, "%s", c->name); *rdma = 1; break; }
    if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !name[0]) snprintf(name, cap, "%s", c->name);
  }
  if (!live) return;
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || c->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !c->name) continue;
    char path[320];
    snprintf(path, sizeof path, "/sys/class/net/%.64s/speed", c->name);
    FILE *f = fopen(path, "r");
    long v = 0;
    if (f) {
      if (fscanf(f, "%ld", &v) == 1 && v > 0) *mbps = v;
      fclose(f);
    }
    if (*mbps) break;
  }
}

static schedc_status from_hwloc(sc_tp *t, hwloc_topology_t topo, int live) {
  hwloc_obj_t root = hwloc_get_root_obj(topo);
  const char *hn = hwloc_obj_get_info_by_name(root, "HostName");
  char host[64] = "localhost";
  if (hn) snprintf(host, sizeof host, "%s", hn);
  else if (live) gethostname(host, sizeof host - 1);
  int h = sc_tp_add_host(t, host);
  if (h < 0) return sc_err(SCHEDC_ENOMEM, "out of memory");
  sc_tp_host *H = &t->host[h];
  H->npackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  H->ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  H->npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  if (H->ncores <= 0) H->ncores = H->npus;
  caches(topo, H->caches, sizeof H->caches);
  int first = t->nnuma;
  /* CPU domains: each NUMA node's part of each package (one package spanning several NUMA
   * nodes gives one per node; one NUMA node over two packages, two: the socket link is the
   * boundary either way) */
  int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE), np = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  hwloc_bitmap_t both = hwloc_bitmap_alloc();
  if (!both) return sc_err(SCHEDC_ENOMEM, "out of memory");
  for (int i = 0; i < nn; i++) {
    hwloc_obj_t n = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
    if (!n || !n->cpuset) continue;
    for (int k = 0; k < (np > 0 ? np : 1); k++) {
      hwloc_obj_t pk = np > 0 ? hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, (unsigned)k) : NULL;
      if (pk && pk->cpuset) hwloc_bitmap_and(both, n->cpuset, pk->cpuset);
      else hwloc_bitmap_copy(both, n->cpuset);
      if (hwloc_bitmap_iszero(both) && (np > 0 || !hwloc_bitmap_iszero(n->cpuset))) continue;
      int cores = count_inside(topo, both, HWLOC_OBJ_CORE);
      if (!cores) cores = count_inside(topo, both, HWLOC_OBJ_PU);
      if (sc_tp_add_numa(t, h, (int)n->os_index, pk ? (int)pk->logical_index : -1, cores) < 0) {
        hwloc_bitmap_free(both);
        return sc_err(SCHEDC_ENOMEM, "out of memory");
      }
    }
  }
  hwloc_bitmap_free(both);
  /* GPUs and NICs in bus order (hwloc lists PCI devices in bus order) */
  for (hwloc_obj_t o = NULL; (o = hwloc_get_next_pcidev(topo, o));) {
    unsigned cls = o->attr->pcidev.class_id;
    char bus[SC_TP_BUSID];
    fmt_busid(o, bus);
    if ((cls == 0x0300 || cls == 0x0302) && o->attr->pcidev.vendor_id == 0x10de) {
      int g = sc_tp_add_gpu(t, h, bus);
      if (g < 0) return sc_err(SCHEDC_ENOMEM, "out of memory");
      t->gpu[g].at = place_of(t, first, topo, o);
      t->gpu[g].pcie_gbps = o->attr->pcidev.linkspeed;
    } else if (cls == 0x0200 || cls == 0x0207) {
      char name[64];
      long mbps;
      int rdma;
      nic_name(o, name, sizeof name, &rdma, &mbps, live);
      int i = sc_tp_add_nic(t, h, bus, name[0] ? name : bus);
      if (i < 0) return sc_err(SCHEDC_ENOMEM, "out of memory");
      t->nic[i].speed_mbps = mbps;
      t->nic[i].rdma = rdma;
      t->nic[i].at = place_of(t, first, topo, o);
    }
  }
  /* switch ids count per host: renumber gp_index-based ids densely for the file */
  for (int i = 0; i < t->ngpu; i++) if (t->gpu[i].host == h && t->gpu[i].at.sw >= 0) H->nswitches++;
  H->nvlink = SC_NV_UNKNOWN; /* hwloc does not see NVLink; NVML may (nvml.c) */
  return SCHEDC_OK;
}

/* hwloc's PCI plugin (discovery only) keeps libpciaccess's state in that library's globals and
 * never frees it; when hwloc unloads the plugin, libpciaccess goes too and the state becomes
 * unreachable (LeakSanitizer: ~1 KB per discovery, the ASan tree's topo.cli and tune.cost_table).
 * Pinned for the life of the process (RTLD_NODELETE), the state stays reachable. Not there: no
 * PCI discovery to pin for. */
static void pin_pciaccess(void) {
  static int done;
  if (!done) {
    done = 1;
    (void)dlopen("libpciaccess.so.0", RTLD_LAZY | RTLD_NODELETE);
  }
}

static schedc_status load(sc_tp *t, const char *xml, const char *synth, const char *what) {
  if (!xml && !synth) pin_pciaccess();
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo)) return sc_err(SCHEDC_ENOMEM, "hwloc_topology_init failed");
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  int rc = 0;
  if (xml) rc = hwloc_topology_set_xml(topo, xml);
  if (synth && !rc) { /* hwloc wants the levels down to PUs: "pack:2 core:4" means one PU per core */
    char d[512];
    snprintf(d, sizeof d, "%s%s", synth, strstr(synth, "pu:") || strstr(synth, "PU:") ? "" : " pu:1");
    rc = strlen(synth) > 400 ? -1 : hwloc_topology_set_synthetic(topo, d);
  }
  if (!rc) rc = hwloc_topology_load(topo);
  if (rc) {
    hwloc_topology_destroy(topo);
    if (synth) return sc_err(SCHEDC_EINVAL, "'%s' is not an hwloc synthetic description (e.g. \"pack:2 core:4\")", synth);
    return sc_err(SCHEDC_EINVAL, "%s: hwloc could not load it as %s", xml ? xml : "this machine", what);
  }
  schedc_status st = from_hwloc(t, topo, !xml && !synth);
  hwloc_topology_destroy(topo);
  if (st != SCHEDC_OK) return st;
  t->source = xml ? "hwloc XML" : synth ? "hwloc synthetic" : "hwloc";
  return SCHEDC_OK;
}

schedc_status sc_tp_discover(sc_tp *t) {
  schedc_status st = load(t, NULL, NULL, "this machine");
  if (st != SCHEDC_OK) return st;
  sc_tp_nvml_links(t);
  return sc_tp_finish(t);
}

schedc_status sc_tp_synthetic(sc_tp *t, const char *desc) {
  schedc_status st = load(t, NULL, desc, "synthetic");
  return st != SCHEDC_OK ? st : sc_tp_finish(t);
}

/* hwloc trusts an XML file's cpusets and nodesets; a consistent-looking but wrong one can make
 * its loader crash (the fuzzer found a SEGV in hwloc 2.9's hwloc_bitmap_compare_first). So the
 * file is loaded once in a child process first (stderr silenced, 20 s alarm), which reports on a
 * pipe: 0 loaded, 1 hwloc refused it, 2 the loader died (no report: a signal, a sanitizer's exit)
 * or did not finish in 30 s. The pipe, not the exit status, is the answer: a process that
 * ignores SIGCHLD has its children reaped by the kernel, and waitpid then fails with ECHILD.
 * Loading is deterministic: what the child survives, we do. */
static int trial_load(const char *path) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC)) return 2;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) { close(fds[0]); close(fds[1]); return 2; }
  if (pid == 0) {
    close(fds[0]);
    signal(SIGALRM, SIG_DFL); /* an ignored SIGALRM is inherited ignored: the alarm must still end it */
    sigset_t all;
    sigemptyset(&all);
    sigaddset(&all, SIGALRM);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    alarm(20);
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) dup2(fd, 2);
    char verdict = '1';
    hwloc_topology_t topo;
    if (!hwloc_topology_init(&topo)) {
      hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
      if (!hwloc_topology_set_xml(topo, path) && !hwloc_topology_load(topo)) verdict = '0';
    }
    ssize_t w;
    do w = write(fds[1], &verdict, 1); while (w < 0 && errno == EINTR);
    _exit(0);
  }
  close(fds[1]);
  char verdict = 0;
  struct pollfd p = {fds[0], POLLIN, 0};
  int got = 0;
  int late = 0;
  for (;;) {
    int rc = poll(&p, 1, 30000);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) { late = rc == 0; break; } /* no answer in 30 s (its alarm should have ended it): a crash */
    ssize_t n = read(fds[0], &verdict, 1);
    if (n < 0 && errno == EINTR) continue;
    got = n == 1; /* 0: end of file, the child died without a word */
    break;
  }
  close(fds[0]);
  if (late) kill(pid, SIGKILL); /* still running, so not reaped: its pid is still its own */
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {} /* reaped; ECHILD when SIGCHLD is ignored */
  return !got ? 2 : verdict == '0' ? 0 : 1;
}

/* The <topology version="M.m"> of an hwloc XML: its major number (1 when absent: hwloc 1.x wrote
 * none) and the line, through our reader (which has already accepted the file). */
typedef struct hw_root { int major, line, seen; char version[32]; } hw_root;

static int hw_root_open(void *ctx, const char *name, const sc_xml_attr *a, int na, int line, char *err, size_t cap) {
  (void)name; (void)err; (void)cap;
  hw_root *r = ctx;
  r->seen = 1;
  r->line = line;
  r->major = 1;
  for (int i = 0; i < na; i++)
    if (!strcmp(a[i].name, "version")) {
      snprintf(r->version, sizeof r->version, "%s", a[i].value);
      r->major = atoi(a[i].value); /* hwloc reads "%u.%u" */
    }
  return -1; /* the root is all we need */
}

schedc_status sc_tp_import_hwloc_xml(sc_tp *t, const char *path) {
  /* well-formed first, with our reader: its errors have a line, and hwloc's parser then only
   * sees XML that a strict reader accepted */
  size_t len;
  char *text = sc_read_file(path, &len);
  if (!text) return sc_err(SCHEDC_EIO, "%s: cannot read it", path);
  char err[512];
  sc_xml_cb cb = {NULL, NULL, NULL};
  int rc = sc_xml_parse(path, text, len, &cb, err, sizeof err);
  hw_root root = {0, 0, 0, ""};
  if (!rc) {
    sc_xml_cb rcb = {&root, hw_root_open, NULL};
    (void)sc_xml_parse(path, text, len, &rcb, err, sizeof err);
  }
  free(text);
  if (rc) return sc_err(SCHEDC_EINVAL, "%s", err);
  /* hwloc refuses an XML of a later major version than its own without saying why (unless
   * HWLOC_XML_VERBOSE is set): say it */
  unsigned api = hwloc_get_api_version();
  int mine = (int)(api >> 16);
  if (root.seen && root.major > mine)
    return sc_err(SCHEDC_EINVAL, "%s:%d: hwloc XML version %s, written by hwloc %d.x: the hwloc this schedc uses (%u.%u.%u) "
                  "reads XML versions 1.x to %d.x; export it with hwloc %d.x (lstopo --of xml), or build schedc with hwloc %d",
                  path, root.line, root.version, root.major, api >> 16, (api >> 8) & 0xff, api & 0xff, mine, mine, root.major);
  int trial = trial_load(path);
  if (trial == 2)
    return sc_err(SCHEDC_EINVAL, "%s: hwloc's XML loader crashed on it in a child process: not a consistent hwloc topology", path);
  if (trial == 1)
    return sc_err(SCHEDC_EINVAL, "%s: hwloc could not load it as hwloc XML (lstopo --whole-io --output-format xml)", path);
  schedc_status st = load(t, path, NULL, "hwloc XML (lstopo --whole-io --output-format xml)");
  return st != SCHEDC_OK ? st : sc_tp_finish(t);
}

/* Linked, not loaded: the file is the one that holds its functions; the version is the API
 * version of the library running (hwloc_get_api_version), and of the headers schedc was built
 * with when they differ. */
void sc_tp_hwloc_probe(sc_probe *p) {
  unsigned v = hwloc_get_api_version(), h = HWLOC_API_VERSION;
  p->built = p->found = 1;
  sc_dl_addr_path((const void *)(uintptr_t)hwloc_get_api_version, p->path, sizeof p->path);
  int n = snprintf(p->version, sizeof p->version, "API %u.%u.%u", v >> 16, v >> 8 & 0xff, v & 0xff);
  if (v != h && n > 0 && (size_t)n < sizeof p->version)
    snprintf(p->version + n, sizeof p->version - (size_t)n, " (built with %u.%u.%u)", h >> 16, h >> 8 & 0xff, h & 0xff);
}

#endif
