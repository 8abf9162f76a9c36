/*
 * test_topo.c — the topology model (docs/topology.md): hwloc synthetic machines and hwloc XML,
 * the NCCL-format fixtures of this folder (PROVENANCE), nearest NICs, NVLink kinds, ranks and
 * levels; the written topology file through the DSL, the ring's crossings of the socket boundary
 * counted on the plan's transfers, hierarchical's rails on a two-host dump, the cost model's
 * links from the levels, and malformed XML rejected with its line; the NCCL input files of the
 * clouds' published forms (cloud_*.xml), RDMA NICs preferred in an hwloc capture, the format told
 * by the first element, hwloc's loader with SIGCHLD ignored, duplicate bus ids, hwloc 3.0 XML.
 * With "large": a generated fused dump of 40,000 hosts (near-linear import; ctest's timeout).
 * Usage: test_topo TESTS_TOPO_DIR SCHEDULES_DIR WORKDIR [large]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "fileio.h"
#include "topology.h"
#include "xml.h"

static const char *dir, *sched, *work;

static sc_tp *nccl(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len;
  char *text = sc_read_file(path, &len);
  sc_tp *t = sc_tp_new();
  schedc_status st = text && t ? sc_tp_import_nccl(t, name, text, len) : SCHEDC_EIO;
  free(text);
  if (st != SCHEDC_OK) { fprintf(stderr, "%s: %s\n", name, schedc_errmsg()); sc_tp_free(t); return NULL; }
  return t;
}

static const char *numa_busid_nic(const sc_tp *t, int gpu, int k) { return t->nic[t->gpu[gpu].nics[k]].name; }
static int gpu_numa_id(const sc_tp *t, int gpu) { return t->gpu[gpu].at.numa >= 0 ? t->numa[t->gpu[gpu].at.numa].id : -1; }
static int level_of(const sc_tp *t, const char *name) {
  for (int l = 0; l < t->nlevels; l++) if (!strcmp(t->level[l].name, name)) return l;
  return -1;
}

/* Write t's topology file into WORKDIR/name; the path (static buffer per call site). */
static const char *write_lua(const sc_tp *t, const char *name, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", work, name);
  char *s = sc_tp_lua(t);
  FILE *f = fopen(path, "w");
  CHECK(s && f);
  if (s && f) fputs(s, f);
  if (f) fclose(f);
  free(s);
  return path;
}

static schedc_plan *plan(const char *file, const char *topo, const char *def) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", sched, file);
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.topology = topo;
  const char *defs[1] = {def};
  lo.defines = defs;
  lo.ndefines = def ? 1 : 0;
  schedc_plan *pl = NULL;
  if (schedc_plan_open(strchr(file, '/') ? file : p, &lo, &pl) != SCHEDC_OK) fprintf(stderr, "%s: %s\n", file, schedc_errmsg());
  return pl;
}

/* Distinct directed edges (src -> dst) of a plan whose ranks differ in group at level l. */
static int crossing_edges(const schedc_plan *pl, const sc_tp *t, int l) {
  schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(pl, &in);
  int n = in.nranks, c = 0;
  char *seen = calloc((size_t)n * n, 1);
  for (long i = 0; i < in.ntransfers; i++) {
    schedc_transfer x;
    schedc_plan_transfer(pl, i, &x);
    if (seen[x.src * n + x.dst]) continue;
    seen[x.src * n + x.dst] = 1;
    c += t->group[(size_t)x.src * SC_TP_MAX_LEVELS + l] != t->group[(size_t)x.dst * SC_TP_MAX_LEVELS + l];
  }
  free(seen);
  return c;
}

/* Well-formed but inconsistent (found by fuzz.topo: hwloc 2.9's loader dies on it): refused, and
 * this process lives (the loader's first run is in a child). */
static void crash_refused(void) {
  char p[512];
  snprintf(p, sizeof p, "%s/hwloc_crash.xml", dir);
  sc_tp *t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "hwloc_crash.xml: hwloc's XML loader crashed on it in a child process");
  sc_tp_free(t);
}

static void test_synthetic(void) {
  sc_tp *t = sc_tp_new();
  schedc_status st = sc_tp_synthetic(t, "pack:2 core:4");
  if (st == SCHEDC_EUNAVAIL) { printf("[no hwloc in this build: synthetic and hwloc XML skipped]\n"); sc_tp_free(t); return; }
  CHECK(st == SCHEDC_OK);
  CHECK(t->nranks == 8 && t->nhost == 1 && t->ngpu == 0);
  CHECK(t->nnuma == 2 && t->numa[0].cpus == 4 && t->numa[1].cpus == 4 && t->numa[1].package == 1);
  CHECK(t->nlevels == 3 && !strcmp(t->level[0].name, "host") && !strcmp(t->level[1].name, "numa") && !strcmp(t->level[2].name, "core"));
  /* ranks 0-3 on package 0, 4-7 on package 1 */
  CHECK(t->group[3 * SC_TP_MAX_LEVELS + 1] != t->group[4 * SC_TP_MAX_LEVELS + 1]);
  CHECK(t->group[0 * SC_TP_MAX_LEVELS + 1] == t->group[3 * SC_TP_MAX_LEVELS + 1]);
  char path[512];
  write_lua(t, "syn.lua", path, sizeof path);
  schedc_plan *pl = plan("ring.lua", path, NULL);
  CHECK(pl != NULL);
  if (pl) CHECK(crossing_edges(pl, t, 1) == 2);
  schedc_plan_free(pl);
  pl = plan("hierarchical.lua", path, NULL); /* one host: the plain ring */
  CHECK(pl != NULL);
  schedc_plan_free(pl);
  sc_tp_free(t);
  /* a bad description is an error, not a crash */
  t = sc_tp_new();
  CHECK(sc_tp_synthetic(t, "pack:two core:4") == SCHEDC_EINVAL);
  sc_tp_free(t);

  /* hwloc XML: this VM (1 NUMA node, 2 cores, eth0) and a two-socket machine with GPUs */
  char p[512];
  snprintf(p, sizeof p, "%s/hwloc_vm.xml", dir);
  t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_OK);
  CHECK(t->nranks == 2 && t->nnuma == 1 && t->numa[0].cpus == 2 && t->numa[0].id == 0);
  CHECK(t->nnic == 1 && !strcmp(t->nic[0].name, "eth0") && !strcmp(t->nic[0].busid, "0000:00:03.0"));
  CHECK(t->host[0].nvlink == SC_NV_NONE && !strcmp(t->host[0].name, "vm"));
  sc_tp_free(t);
  snprintf(p, sizeof p, "%s/hwloc_2socket_gpu.xml", dir);
  t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_OK);
  CHECK(t->ngpu == 3 && t->nnic == 2 && t->nranks == 3);
  if (t->ngpu == 3 && t->nnic == 2) {
    CHECK(gpu_numa_id(t, 0) == 0 && gpu_numa_id(t, 1) == 1 && gpu_numa_id(t, 2) == 1);
    CHECK(t->gpu[0].at.sw >= 0 && t->gpu[1].at.sw >= 0 && t->gpu[2].at.sw < 0 && t->gpu[0].at.sw != t->gpu[1].at.sw);
    CHECK(t->nic[1].at.sw == t->gpu[1].at.sw);                 /* mlx5_1 shares GPU 1's switch */
    CHECK(t->gpu[0].nnics == 1 && !strcmp(numa_busid_nic(t, 0, 0), "mlx5_0"));
    CHECK(t->gpu[2].nnics == 1 && !strcmp(numa_busid_nic(t, 2, 0), "mlx5_1")); /* same host bridge */
    CHECK(t->host[0].nvlink == SC_NV_UNKNOWN);                 /* hwloc cannot see NVLink */
    CHECK(level_of(t, "numa") == 1 && level_of(t, "switch") == 2);
  }
  sc_tp_free(t);
  crash_refused();
  /* not well-formed: our reader's line before hwloc sees it */
  snprintf(p, sizeof p, "%s/bad_hwloc.xml", work);
  FILE *f = fopen(p, "w");
  fputs("<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n  <object type=\"Machine\">\n</topology>\n", f);
  fclose(f);
  t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "bad_hwloc.xml:4: closing tag </topology> does not match <object>");
  sc_tp_free(t);

  /* a process that ignores SIGCHLD (its children reaped by the kernel, so waitpid says ECHILD):
   * a good file still loads, and the crashing one is still told apart */
  void (*was)(int) = signal(SIGCHLD, SIG_IGN);
  snprintf(p, sizeof p, "%s/hwloc_2socket_gpu.xml", dir);
  t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_OK);
  CHECK(t->ngpu == 3);
  sc_tp_free(t);
  crash_refused();
  signal(SIGCHLD, was);

  /* hwloc XML of a later major version: the version is the reason given; 2.1 still loads */
  char *vm = NULL;
  size_t vlen;
  snprintf(p, sizeof p, "%s/hwloc_vm.xml", dir);
  vm = sc_read_file(p, &vlen);
  CHECK(vm && strstr(vm, "<topology version=\"2.0\">"));
  for (int v = 0; vm && v < 2; v++) {
    char *at = strstr(vm, "<topology version=\"") + 19; /* "M.m" */
    at[0] = v ? '2' : '3';
    at[2] = v ? '1' : '0';
    snprintf(p, sizeof p, "%s/hwloc_v%s.xml", work, v ? "21" : "3");
    f = fopen(p, "w");
    fputs(vm, f);
    fclose(f);
    t = sc_tp_new();
    schedc_status vs = sc_tp_import_hwloc_xml(t, p);
    if (v) {
      CHECK(vs == SCHEDC_OK && t->nranks == 2);
    } else {
      CHECK(vs == SCHEDC_EINVAL);
      CHECK_CONTAINS(schedc_errmsg(), "hwloc_v3.xml:3: hwloc XML version 3.0, written by hwloc 3.x: the hwloc this schedc uses (2.");
      CHECK_CONTAINS(schedc_errmsg(), "reads XML versions 1.x to 2.x");
    }
    sc_tp_free(t);
  }
  free(vm);

  /* an AWS-like capture: ENA (plain Ethernet) beside EFA (an OpenFabrics device) on a GPU's
   * switch and host bridge; only the RDMA NICs are nearest, and with none RDMA, all are */
  snprintf(p, sizeof p, "%s/hwloc_efa_ena.xml", dir);
  t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_OK);
  CHECK(t->ngpu == 5 && t->nnic == 4);
  if (t->ngpu == 5 && t->nnic == 4) {
    CHECK(gpu_numa_id(t, 0) == 0 && gpu_numa_id(t, 2) == 1 && gpu_numa_id(t, 4) == 1);
    CHECK(t->gpu[0].nnics == 1 && !strcmp(numa_busid_nic(t, 0, 0), "rdmap17s27"));   /* not ens26 on its switch */
    CHECK(t->gpu[1].nnics == 1 && !strcmp(numa_busid_nic(t, 1, 0), "rdmap17s27"));
    CHECK(t->gpu[2].nnics == 1 && !strcmp(numa_busid_nic(t, 2, 0), "rdmap145s27"));
    CHECK(!strcmp(t->gpu[4].busid, "0000:93:00.0") && t->gpu[4].at.sw < 0);
    CHECK(t->gpu[4].nnics == 1 && !strcmp(numa_busid_nic(t, 4, 0), "rdmap145s27")); /* not ens65 on its host bridge */
    CHECK(t->nic_of[0] >= 0 && !strcmp(t->nic[t->nic_of[0]].name, "rdmap17s27"));
  }
  char *j = sc_tp_json(t);
  CHECK_CONTAINS(j, "\"name\": \"ens26\", \"speed_mbps\": 0, \"numa\": 0, \"rdma\": false}");
  CHECK_CONTAINS(j, "\"name\": \"rdmap17s27\", \"speed_mbps\": 0, \"numa\": 0, \"rdma\": true}");
  free(j);
  sc_tp_free(t);
  char *efa = sc_read_file(p, &vlen);
  CHECK(efa != NULL);
  for (char *q = efa; efa && (q = strstr(q, "osdev_type=\"3\"")); q++) q[12] = '2'; /* every NIC plain Ethernet */
  snprintf(p, sizeof p, "%s/hwloc_no_rdma.xml", work);
  f = fopen(p, "w");
  if (efa) fputs(efa, f);
  fclose(f);
  free(efa);
  t = sc_tp_new();
  CHECK(sc_tp_import_hwloc_xml(t, p) == SCHEDC_OK);
  if (t->ngpu == 5) {
    CHECK(t->gpu[0].nnics == 2 && !strcmp(numa_busid_nic(t, 0, 0), "ens26") && !strcmp(numa_busid_nic(t, 0, 1), "rdmap17s27"));
    CHECK(t->gpu[4].nnics == 2 && !strcmp(numa_busid_nic(t, 4, 0), "ens65"));
  }
  sc_tp_free(t);
}

static void test_nvswitch(void) {
  sc_tp *t = nccl("nvswitch.xml");
  CHECK(t != NULL);
  if (!t) return;
  CHECK(t->nhost == 1 && t->ngpu == 8 && t->nnic == 8 && t->nranks == 8 && t->host[0].nvlink == SC_NV_NVSWITCH);
  CHECK(gpu_numa_id(t, 0) == 0 && gpu_numa_id(t, 3) == 0 && gpu_numa_id(t, 4) == 1 && gpu_numa_id(t, 7) == 1);
  CHECK(t->gpu[0].at.sw == t->gpu[1].at.sw && t->gpu[1].at.sw != t->gpu[2].at.sw);
  CHECK(t->gpu[0].nnics == 2 && !strcmp(numa_busid_nic(t, 0, 0), "mlx5_0") && !strcmp(numa_busid_nic(t, 0, 1), "mlx5_1"));
  CHECK(t->gpu[5].nnics == 2 && !strcmp(numa_busid_nic(t, 5, 0), "mlx5_4"));
  CHECK(t->nic_of[0] >= 0 && t->nic_of[1] >= 0 && !strcmp(t->nic[t->nic_of[0]].name, "mlx5_0") && !strcmp(t->nic[t->nic_of[1]].name, "mlx5_1"));
  CHECK(t->nlevels == 2 && !strcmp(t->level[1].kind, "nvlink") && t->level[1].gbps == 18 * 20.0);
  CHECK(t->level[0].gbps == 50.0); /* a 400 Gb/s rail NIC per GPU */
  char *j = sc_tp_json(t);
  CHECK_CONTAINS(j, "{\"busid\": \"0000:18:00.0\", \"numa\": 0, \"nics\": [\"0000:19:00.0\", \"0000:29:00.0\"]}");
  CHECK_CONTAINS(j, "\"nvlink\": \"nvswitch\"");
  CHECK_CONTAINS(j, "{\"busid\": \"0000:19:00.0\", \"name\": \"mlx5_0\", \"speed_mbps\": 400000, \"numa\": 0, \"rdma\": null}");
  free(j);
  char path[512];
  write_lua(t, "nvswitch.lua", path, sizeof path);
  schedc_cost_model m = SCHEDC_COST_MODEL_INIT;
  CHECK(schedc_cost_model_load(path, &m) == SCHEDC_OK);
  CHECK(m.intra.kind == SCHEDC_LINK_NVLINK && m.intra.gbps == 360.0 && m.inter.kind == SCHEDC_LINK_NET && m.inter.gbps == 50.0);
  CHECK(m.reduce_gbps == 1000.0 && m.local_passes == 0);
  uint64_t fp = sc_tp_fingerprint(t);
  sc_tp_free(t);
  t = nccl("nvswitch.xml");
  CHECK(t && sc_tp_fingerprint(t) == fp);
  sc_tp_free(t);
}

static void test_pcie(void) {
  sc_tp *t = nccl("pcie_2socket.xml");
  CHECK(t != NULL);
  if (!t) return;
  CHECK(t->ngpu == 8 && t->host[0].nvlink == SC_NV_NONE);
  /* ranks from rank="": round-robin across the sockets */
  CHECK(t->gpu_of[1] == 4 && !strcmp(t->gpu[t->gpu_of[1]].busid, "0000:84:00.0") && gpu_numa_id(t, t->gpu_of[1]) == 1);
  CHECK(t->gpu[1].pcie_gbps == 0 && t->gpu[3].pcie_gbps == 0 && t->gpu[0].pcie_gbps > 31 && t->gpu[0].pcie_gbps < 32);
  int ln = level_of(t, "numa");
  CHECK(ln == 1 && level_of(t, "switch") == 2 && level_of(t, "gpu") == 3);
  CHECK(t->gpu[2].nnics == 1 && !strcmp(numa_busid_nic(t, 2, 0), "mlx5_0")); /* no NIC on its switch: same NUMA node */
  char path[512];
  write_lua(t, "pcie.lua", path, sizeof path);
  schedc_plan *pl = plan("ring.lua", path, NULL);
  CHECK(pl != NULL);
  if (pl && ln >= 0) CHECK(crossing_edges(pl, t, ln) == 2);   /* the locality ring: twice */
  schedc_plan_free(pl);
  pl = plan("ring.lua", path, "locality=false");
  CHECK(pl != NULL);
  if (pl && ln >= 0) CHECK(crossing_edges(pl, t, ln) == 8);   /* rank order: every hop */
  schedc_plan_free(pl);
  /* the same count from the DSL */
  char lua[512];
  snprintf(lua, sizeof lua, "%s/crossings.lua", dir);
  pl = plan(lua, path, NULL);
  CHECK(pl != NULL);
  schedc_plan_free(pl);
  sc_tp_free(t);
}

static void test_mesh_and_fused(void) {
  sc_tp *t = nccl("mesh.xml");
  CHECK(t != NULL);
  if (t) {
    CHECK(t->ngpu == 4 && t->nlink == 12 && t->host[0].nvlink == SC_NV_MESH && t->nnic == 0);
    CHECK(t->gpu[0].at.sw < 0 && t->gpu[0].nnics == 0 && t->nic_of[0] == -1);
    CHECK(level_of(t, "nvlink") == 1 && t->level[2].gbps == 6 * 20.0);
    CHECK(t->group[0 * SC_TP_MAX_LEVELS + 1] == t->group[3 * SC_TP_MAX_LEVELS + 1]); /* one NVLink component */
  }
  sc_tp_free(t);
  t = nccl("fused_2host.xml");
  CHECK(t != NULL);
  if (!t) return;
  CHECK(t->nhost == 2 && t->ngpu == 8 && t->nranks == 8);
  CHECK(t->host[0].nvlink == SC_NV_NVSWITCH && t->host[1].nvlink == SC_NV_NVSWITCH);
  CHECK(t->nlink == 32 && t->link[0].remote[0] == 0 && t->link[0].kind == SC_REMOTE_NVSWITCH); /* the sentinel */
  CHECK(t->gpu[t->gpu_of[5]].host == 1 && t->group[5 * SC_TP_MAX_LEVELS] == 1);
  char path[512];
  write_lua(t, "fused.lua", path, sizeof path);
  schedc_plan *pl = plan("hierarchical.lua", path, NULL);
  CHECK(pl != NULL);
  if (pl) {
    schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
    schedc_plan_get_info(pl, &in);
    CHECK(in.nnodes == 2);
    int inter = 0, rails = 0;
    for (long i = 0; i < in.ntransfers; i++) {
      schedc_transfer x;
      schedc_plan_transfer(pl, i, &x);
      if ((x.src < 4) != (x.dst < 4)) { inter++; rails += abs(x.src - x.dst) == 4; } /* local rank j <-> local rank j */
    }
    CHECK(inter > 0 && rails == inter);
  }
  schedc_plan_free(pl);
  char lua[512];
  snprintf(lua, sizeof lua, "%s/near_nic.lua", dir);
  pl = plan(lua, path, NULL);
  CHECK(pl != NULL);
  schedc_plan_free(pl);
  sc_tp_free(t);
}

/* NCCL input files in the forms Azure (ND v2, v4, v5) and AWS (p4d, p4de) publish: GPUs and
 * NICs as <pci> leaves with a class only. Per form: the GPUs in rank (bus) order, their NUMA
 * node, their nearest NICs and the rail NIC each sends through. */
static void test_cloud(void) {
  static const struct {
    const char *file;
    const char *gpu[8];
    int numa[8];
    int nnics;           /* nearest NICs per GPU */
    const char *rail[8]; /* its rail NIC's bus id */
  } form[] = {
      {"cloud_ndv2.xml", /* GPUs on the sockets' root complexes, one InfiniBand NIC on NUMA 0 */
       {"0011:00:00.0", "0012:00:00.0", "0013:00:00.0", "0014:00:00.0", "0015:00:00.0", "0016:00:00.0", "0017:00:00.0", "0018:00:00.0"},
       {0, 0, 0, 0, 1, 1, 1, 1}, 1,
       {"0121:00:00.0", "0121:00:00.0", "0121:00:00.0", "0121:00:00.0", "0121:00:00.0", "0121:00:00.0", "0121:00:00.0", "0121:00:00.0"}},
      {"cloud_ndv4.xml", /* four NUMA nodes, each a virtual switch of two GPUs and two NICs, listed out of bus order */
       {"0021:00:00.0", "0022:00:00.0", "0023:00:00.0", "0024:00:00.0", "002b:00:00.0", "002c:00:00.0", "002d:00:00.0", "002e:00:00.0"},
       {1, 1, 0, 0, 3, 3, 2, 2}, 2,
       {"0121:00:00.0", "0122:00:00.0", "0123:00:00.0", "0124:00:00.0", "0125:00:00.0", "0126:00:00.0", "0127:00:00.0", "0128:00:00.0"}},
      {"cloud_ndv5.xml", /* a virtual switch per GPU and its NIC */
       {"0031:00:00.0", "0032:00:00.0", "0033:00:00.0", "0038:00:00.0", "0039:00:00.0", "003a:00:00.0", "003b:00:00.0", "003c:00:00.0"},
       {0, 0, 0, 0, 1, 1, 1, 1}, 1,
       {"0131:00:00.0", "0132:00:00.0", "0133:00:00.0", "0134:00:00.0", "0135:00:00.0", "0136:00:00.0", "0137:00:00.0", "0138:00:00.0"}},
      {"cloud_p4d.xml", /* two switches per socket, two GPUs and one EFA each */
       {"0000:30:1c.0", "0000:30:1d.0", "0000:40:1c.0", "0000:40:1d.0", "0000:b0:1c.0", "0000:b0:1d.0", "0000:c0:1c.0", "0000:c0:1d.0"},
       {0, 0, 0, 0, 1, 1, 1, 1}, 1,
       {"0000:30:1b.0", "0000:30:1b.0", "0000:40:1b.0", "0000:40:1b.0", "0000:b0:1b.0", "0000:b0:1b.0", "0000:c0:1b.0", "0000:c0:1b.0"}},
      {"cloud_p4de.xml", /* the same with vendor and device ids */
       {"0000:30:1c.0", "0000:30:1d.0", "0000:40:1c.0", "0000:40:1d.0", "0000:b0:1c.0", "0000:b0:1d.0", "0000:c0:1c.0", "0000:c0:1d.0"},
       {0, 0, 0, 0, 1, 1, 1, 1}, 1,
       {"0000:30:1b.0", "0000:30:1b.0", "0000:40:1b.0", "0000:40:1b.0", "0000:b0:1b.0", "0000:b0:1b.0", "0000:c0:1b.0", "0000:c0:1b.0"}},
  };
  for (size_t k = 0; k < sizeof form / sizeof form[0]; k++) {
    sc_tp *t = nccl(form[k].file);
    CHECK(t != NULL);
    if (!t) continue;
    CHECK(t->nhost == 1 && t->ngpu == 8 && t->nranks == 8);
    CHECK(t->host[0].nvlink == SC_NV_UNKNOWN); /* NCCL asks NVML at run time: the file cannot say */
    if (t->nranks != 8) { sc_tp_free(t); continue; }
    for (int r = 0; r < 8; r++) {
      const sc_tp_gpu *g = &t->gpu[t->gpu_of[r]];
      int ok = !strcmp(g->busid, form[k].gpu[r]) && gpu_numa_id(t, t->gpu_of[r]) == form[k].numa[r] && g->nnics == form[k].nnics &&
               t->nic_of[r] >= 0 && !strcmp(t->nic[t->nic_of[r]].busid, form[k].rail[r]);
      if (!ok)
        printf("%s rank %d: GPU %s NUMA %d, %d nearest NICs, rail %s\n", form[k].file, r, g->busid, gpu_numa_id(t, t->gpu_of[r]),
               g->nnics, t->nic_of[r] >= 0 ? t->nic[t->nic_of[r]].busid : "none");
      CHECK(ok);
    }
    sc_tp_free(t);
  }
  /* through the public API: the p4d form's leading comment mentions <topology>, it is still NCCL's */
  char p[512];
  snprintf(p, sizeof p, "%s/cloud_p4d.xml", dir);
  schedc_topology *pt = NULL;
  CHECK(schedc_topology_import(p, &pt) == SCHEDC_OK && schedc_topology_nranks(pt) == 8);
  schedc_topology_free(pt);
  /* AWS's first p5 form names devices by bus id only: no GPU can be told, and the message says why */
  sc_tp *t = sc_tp_new();
  size_t len;
  snprintf(p, sizeof p, "%s/cloud_p5_classless.xml", dir);
  char *text = sc_read_file(p, &len);
  CHECK(text && sc_tp_import_nccl(t, "cloud_p5_classless.xml", text, len) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "cloud_p5_classless.xml:9: no GPU, and 16 <pci> devices without a class");
  free(text);
  sc_tp_free(t);
  /* NICs of class 0x02 with an empty <nic>, and a GPU's NVLink to itself (Azure's NC A100 v4
   * files): one NIC each; the self link hides its far end (NVLink unknown, no mesh level) */
  static const char nc[] = "<system version=\"1\">\n<cpu numaid=\"0\" affinity=\"ff\">\n"
                           "<pci busid=\"0001:00:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"80\">"
                           "<nvlink target=\"0001:00:00.0\" count=\"12\" tclass=\"0x030200\"/></gpu></pci>\n"
                           "<pci busid=\"0002:00:00.0\" class=\"0x030200\"><gpu dev=\"1\" sm=\"80\"/></pci>\n"
                           "<pci busid=\"0101:00:00.0\" class=\"0x020000\"><nic/></pci>\n</cpu>\n</system>\n";
  t = sc_tp_new();
  CHECK(sc_tp_import_nccl(t, "nc.xml", nc, strlen(nc)) == SCHEDC_OK);
  CHECK(t->ngpu == 2 && t->nnic == 1 && t->nlink == 1 && t->link[0].remote[0] == 0 && t->link[0].kind == SC_REMOTE_UNKNOWN);
  CHECK(t->host[0].nvlink == SC_NV_UNKNOWN && level_of(t, "nvlink") < 0 && t->gpu[1].nnics == 1);
  sc_tp_free(t);
}

/* The format is the first element's: comments, instructions and a DOCTYPE before it may mention
 * any element. */
static void test_root(void) {
  static const struct { const char *text, *root; } c[] = {
      {"<!-- converted from an hwloc <topology> capture -->\n<system version=\"1\"/>", "system"},
      {"<?xml version=\"1.0\"?>\n<?note <topology>?>\n<system/>", "system"},
      {"<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n<!-- <system> -->\n<topology version=\"2.0\"/>", "topology"},
      {"<!-- only a comment <topology> -->", ""},
      {"<!-- unclosed <topology>", ""},
  };
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
    char root[64];
    sc_xml_root(c[i].text, strlen(c[i].text), root, sizeof root);
    if (strcmp(root, c[i].root)) printf("root of case %zu: '%s', wanted '%s'\n", i, root, c[i].root);
    CHECK(!strcmp(root, c[i].root));
  }
  char p[512];
  snprintf(p, sizeof p, "%s/comment_topology.xml", work);
  FILE *f = fopen(p, "w");
  fputs("<!-- an NCCL file; hwloc's would start with <topology> -->\n<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"f\">\n"
        "    <pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n  </cpu>\n</system>\n", f);
  fclose(f);
  schedc_topology *pt = NULL;
  CHECK(schedc_topology_import(p, &pt) == SCHEDC_OK && schedc_topology_nranks(pt) == 1);
  if (!pt) printf("comment_topology.xml: %s\n", schedc_errmsg());
  schedc_topology_free(pt);
}

/* Malformed and hostile inputs: each rejected with its line and what is wrong. */
static void test_bad(void) {
  static const struct { const char *text, *want; } bad[] = {
      {"<system>\n<cpu numaid=\"0\">\n<pci busid=\"zz\"/>\n</cpu></system>", "bad.xml:3: <pci busid=\"zz\">: not a PCI bus id"},
      {"<system>\n<cpu>\n</system>", "bad.xml:3: closing tag </system> does not match <cpu>"},
      {"<system>\n<cpu numaid=\"0\" affinity=\"ff\">\n<pci busid=\"0000:01:00.0\">\n<gpu rank=\"x\"/></pci></cpu></system>", "bad.xml:4: <gpu rank=\"x\">"},
      {"<!DOCTYPE system [<!ENTITY a \"aaaa\">]>\n<system/>", "bad.xml:1: a <!DOCTYPE with an internal subset"},
      {"<system>\n<cpu a='1' a='2'/>\n</system>", "bad.xml:2: attribute 'a' given twice"},
      {"", "bad.xml:1: no XML element"},
      {"<system>\n\n<cpu numaid=\"0\"\n", "bad.xml:3: <cpu is not closed"},
      {"<topo/>", "bad.xml:1: the root element is <topo>"},
      {"<system>\n<gpu/></system>", "bad.xml:2: <gpu> must be inside a <pci> element"},
      {"<system>\n<cpu x=\"&foo;\"/></system>", "bad.xml:2: unknown or malformed entity"},
      {"<system><cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\"><gpu rank=\"0\"/></pci>\n<pci busid=\"0000:02:00.0\"><gpu rank=\"0\"/></pci></cpu></system>", "bad.xml: GPU 0000:02:00.0: rank 0"},
      {"<system>\n<cpu numaid=\"0\"><pci busid=\"0000:01:00.0\"><gpu><nvlink target=\"0000:02:00.0\" count=\"-1\"/></gpu></pci></cpu></system>", "bad.xml:2: <nvlink count=\"-1\">"},
      {"<system/>\n<system/>", "bad.xml:2: a second root element"},
      {"<system>\n</cpu>", "bad.xml:2: closing tag </cpu> does not match <system>"},
      {"<system><cpu numaid=\"99999999999\"/></system>", "bad.xml:1: <cpu numaid=\"99999999999\">"},
      {"<system>\n<cpu numaid=\"0\"><nic><net speed=\"fast\"/></nic></cpu></system>", "bad.xml:2: <net speed=\"fast\">"},
      /* a bus id twice on one host (NCCL would use the first <pci> and ignore the other): refused */
      {"<system><cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"/>\n<pci busid=\"0000:01:00.0\" class=\"0x030200\"/></cpu></system>",
       "bad.xml:3: <pci busid=\"0000:01:00.0\"> again: line 2 has this bus id on the same host"},
      {"<system><cpu numaid=\"0\">\n<pci busid=\"0000:0A:00.0\"><gpu/></pci></cpu>\n<cpu numaid=\"1\">\n<pci busid=\"0000:0a:00.0\"><gpu/></pci></cpu></system>",
       "bad.xml:4: <pci busid=\"0000:0a:00.0\"> again: line 2"},
      {"<system><cpu numaid=\"0\" host_hash=\"0x1\">\n<pci busid=\"0000:01:00.0\"/>\n<pci busid=\"0000:01:00.0\"/></cpu></system>",
       "bad.xml:3: <pci busid=\"0000:01:00.0\"> again: line 2 has this bus id on the same host (host_hash 0x1)"},
      {"<system><cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\">\n<gpu rank=\"0\"/>\n<gpu rank=\"1\"/></pci></cpu></system>",
       "bad.xml:4: a second <gpu> in <pci busid=\"0000:01:00.0\"> (line 2)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sc_tp *t = sc_tp_new();
    CHECK(sc_tp_import_nccl(t, "bad.xml", bad[i].text, strlen(bad[i].text)) == SCHEDC_EINVAL);
    CHECK_CONTAINS(schedc_errmsg(), bad[i].want);
    sc_tp_free(t);
  }
  /* nested deeper than the reader's bound; a NUL byte */
  size_t n = 200 * 7 + 16;
  char *deep = malloc(n);
  strcpy(deep, "<system>\n");
  for (int i = 0; i < 200; i++) strcat(deep, "<a>");
  sc_tp *t = sc_tp_new();
  CHECK(sc_tp_import_nccl(t, "deep.xml", deep, strlen(deep)) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "deep.xml:2: elements nested deeper than 64");
  sc_tp_free(t);
  free(deep);
  t = sc_tp_new();
  CHECK(sc_tp_import_nccl(t, "nul.xml", "<system>\n\0</system>", 19) == SCHEDC_EINVAL);
  CHECK_CONTAINS(schedc_errmsg(), "nul.xml:2: a NUL byte");
  sc_tp_free(t);
  /* through the public API, from a file */
  char p[512];
  snprintf(p, sizeof p, "%s/bad_nccl.xml", work);
  FILE *f = fopen(p, "w");
  fputs("<system version=\"1\">\n  <cpu numaid=\"0\">\n    <pci busid=\"0000:01:00.0\" class=\"0x030200\">\n      <gpu dev=\"0\">\n        <nvlink target=\"nowhere\"/>\n", f);
  fclose(f);
  schedc_topology *pt = NULL;
  CHECK(schedc_topology_import(p, &pt) == SCHEDC_EINVAL && pt == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "bad_nccl.xml:5: <nvlink target=\"nowhere\">: not a PCI bus id");
  /* bus ids */
  char b[SC_TP_BUSID];
  CHECK(sc_tp_busid("0000:0F:00.0", b) == 1 && !strcmp(b, "0000:0f:00.0"));
  CHECK(sc_tp_busid("fffffff:ff:ff.0", b) == 2 && b[0] == 0);
  CHECK(sc_tp_busid("0000:0f:00", b) == 0 && sc_tp_busid("0000:0f:00.9", b) == 0 && sc_tp_busid("1:2:3.4.5", b) == 0);
  /* the same bus id on two hosts of a fused dump is two devices */
  static const char two[] = "<system><cpu numaid=\"0\" host_hash=\"0x1\"><pci busid=\"0000:01:00.0\"><gpu/></pci></cpu>"
                            "<cpu numaid=\"0\" host_hash=\"0x2\"><pci busid=\"0000:01:00.0\"><gpu/></pci></cpu></system>";
  t = sc_tp_new();
  CHECK(sc_tp_import_nccl(t, "two.xml", two, strlen(two)) == SCHEDC_OK && t->nhost == 2 && t->nranks == 2);
  sc_tp_free(t);
}

/* A fused dump of H (40,000) hosts, each in two <cpu> elements (NUMA 0 with its NIC, NUMA 1 with its GPU
 * behind a switch, an NVSwitch link), all hosts' NUMA 0 first: every host is looked up again.
 * The old importer and derivations were quadratic (host lookup) to cubic (rails) in H: 16 s at
 * 70,000 hosts for the lookup alone; now linear but for sorts (ctest's TIMEOUT bounds it). */
static void test_large(void) {
  enum { H = 40000 };
  size_t cap = (size_t)H * 520 + 64, len = 0;
  char *x = malloc(cap);
  CHECK(x != NULL);
  if (!x) return;
  len += (size_t)snprintf(x + len, cap - len, "<system version=\"1\">\n");
  for (int pass = 0; pass < 2; pass++)
    for (int h = 0; h < H; h++) {
      if (!pass)
        len += (size_t)snprintf(x + len, cap - len,
                                "<cpu numaid=\"0\" affinity=\"f\" host_hash=\"0x%x\"><pci busid=\"0000:20:00.0\" class=\"0x020000\">"
                                "<nic><net name=\"efa%d\" dev=\"0\" speed=\"100000\"/></nic></pci></cpu>\n", 0x9e3779b1u * (unsigned)(h + 1), h);
      else
        len += (size_t)snprintf(x + len, cap - len,
                                "<cpu numaid=\"1\" affinity=\"f0\" host_hash=\"0x%x\"><pci busid=\"0000:10:00.0\" class=\"0x060400\">"
                                "<pci busid=\"0000:11:00.0\" class=\"0x030200\"><gpu dev=\"0\"><nvlink target=\"0000:05:00.0\" count=\"18\" "
                                "tclass=\"0x068000\"/></gpu></pci></pci></cpu>\n", 0x9e3779b1u * (unsigned)(h + 1));
    }
  len += (size_t)snprintf(x + len, cap - len, "</system>\n");
  CHECK(len < cap);
  sc_tp *t = sc_tp_new();
  schedc_status st = sc_tp_import_nccl(t, "large.xml", x, len);
  free(x);
  if (st != SCHEDC_OK) printf("large.xml: %s\n", schedc_errmsg());
  CHECK(st == SCHEDC_OK && t->nhost == H && t->ngpu == H && t->nnic == H && t->nranks == H && t->nnuma == 2 * H);
  if (st == SCHEDC_OK && t->nranks == H) {
    int bad = 0;
    for (int r = 0; r < H; r++) {
      const sc_tp_gpu *g = &t->gpu[t->gpu_of[r]];
      bad += g->host != r || gpu_numa_id(t, t->gpu_of[r]) != 1 || g->nnics != 1 || t->nic_of[r] < 0 || t->nic[t->nic_of[r]].host != r ||
             t->host[r].nvlink != SC_NV_NVSWITCH;
    }
    CHECK(bad == 0);
    char name[32];
    snprintf(name, sizeof name, "efa%d", H - 1);
    CHECK(!strcmp(t->nic[t->nic_of[H - 1]].name, name));
    CHECK(t->nlevels == 2 && t->level[0].gbps == 12.5 && t->level[1].gbps == 18 * 20.0);
    char *sum = sc_tp_summary(t), *lua = sc_tp_lua(t);
    snprintf(name, sizeof name, "host %d (host 0x%x)", H - 1, 0x9e3779b1u * (unsigned)H);
    CHECK(sum && strstr(sum, name) && lua && strstr(lua, "nic = \"efa39999\" }, -- rank 39999"));
    free(sum);
    free(lua);
  }
  sc_tp_free(t);
}

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 5 && !strcmp(argv[4], "large"))) {
    fprintf(stderr, "usage: test_topo TESTS_TOPO_DIR SCHEDULES_DIR WORKDIR [large]\n");
    return 2;
  }
  dir = argv[1];
  sched = argv[2];
  work = argv[3];
  if (argc == 5) {
    test_large();
    return DONE();
  }
  test_synthetic();
  test_nvswitch();
  test_pcie();
  test_mesh_and_fused();
  test_cloud();
  test_root();
  test_bad();
  return DONE();
}
