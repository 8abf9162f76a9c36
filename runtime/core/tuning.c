/*
 * tuning.c — the tuning table `schedc tune` writes and communicators read (SCHEDC_TUNING or
 * schedc_comm_opts.tuning) to choose the plan (and slice) for calls made without one:
 *   schedc-tuning 1
 *   # comments
 *   topology FINGERPRINT      (optional: the machine it was measured on; another is refused)
 *   hosts FINGERPRINT         (optional: the layout of ranks on hosts it was measured on,
 *                              schedc_hosts_fingerprint; checked once the communicator's is known)
 *   entry COLLECTIVE NRANKS MIN_BYTES MAX_BYTES|inf SLICE_BYTES PLAN_FILE
 * Sizes are the whole buffer in bytes (as `schedc bench` reports them); PLAN_FILE is relative to
 * the table's directory. Only entries for the communicator's rank count are kept; their plans
 * are loaded (and verified again) at init, so a bad table fails the init with FILE:LINE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tuning.h"
#include "err.h"
#include "fileio.h"
#include "hash.h"
#include "plan.h"

void sc_tuning_free(sc_tuning *t) {
  for (int i = 0; i < t->n; i++) schedc_plan_free(t->e[i].plan);
  free(t->e);
  free(t->path);
  memset(t, 0, sizeof *t);
}

static schedc_status bad(sc_tuning *t, FILE *f, const char *path, int line, const char *what) {
  sc_tuning_free(t);
  if (f) fclose(f);
  return sc_err(SCHEDC_EINVAL, "%s:%d: %s (expected 'entry COLLECTIVE NRANKS MIN_BYTES MAX_BYTES|inf SLICE_BYTES "
                "PLAN_FILE')", path, line, what);
}

/* A table measured by `schedc tune` names the machine it measured (`topology HEX`: the
 * fingerprint of `schedc topo`, docs/topology.md); on another machine its choices are not
 * evidence, so it is refused. Without hwloc in this build the machine cannot be told: accepted. */
static schedc_status machine_matches(const char *path, int ln, unsigned long long fp) {
  schedc_topology *here = NULL;
  schedc_status st = schedc_topology_discover(&here);
  if (st == SCHEDC_EUNAVAIL) return SCHEDC_OK;
  if (st != SCHEDC_OK) return st;
  unsigned long long mine = schedc_topology_fingerprint(here);
  schedc_topology_free(here);
  if (mine == fp) return SCHEDC_OK;
  return sc_err(SCHEDC_EMISMATCH, "%s:%d: this tuning table was measured on a machine whose topology fingerprint is %016llx; "
                "this machine's is %016llx (schedc topo --json): run schedc tune here", path, ln, fp, mine);
}

schedc_status sc_tuning_load(const char *path, int nranks, sc_tuning *t) {
  memset(t, 0, sizeof t[0]);
  /* a regular file only (SCHEDC_TUNING=/dev/zero would feed fgets forever, a FIFO block) */
  char why[512];
  unsigned long long size;
  int fd = sc_open_regular(path, 64ull << 20, &size, why, sizeof why);
  if (fd < 0) return sc_err(SCHEDC_EIO, "tuning table: %s", why);
  FILE *f = fdopen(fd, "r");
  if (!f) {
    close(fd);
    return sc_err(SCHEDC_EIO, "tuning table %s: cannot open it", path);
  }
  char line[1200], dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) slash[1] = 0;
  else dir[0] = 0;
  int ln = 0, seen_header = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    char *p = line + strspn(line, " \t");
    if (*p == '#' || *p == '\n' || !*p) continue;
    if (!seen_header) {
      if (strncmp(p, "schedc-tuning 1", 15)) return bad(t, f, path, ln, "not a schedc tuning table, version 1");
      seen_header = 1;
      continue;
    }
    unsigned long long fp;
    if (sscanf(p, "hosts %16llx", &fp) == 1) { /* measured on this layout of hosts: checked once known */
      t->hosts_fp = fp;
      t->hosts_line = ln;
      if (!t->path && !(t->path = strdup(path))) { sc_tuning_free(t); fclose(f); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
      continue;
    }
    if (sscanf(p, "topology %16llx", &fp) == 1) { /* tuned on a machine of this fingerprint */
      schedc_status ts = machine_matches(path, ln, fp);
      if (ts != SCHEDC_OK) { sc_tuning_free(t); fclose(f); return ts; }
      continue;
    }
    char coll[32], maxs[32], plan[1024];
    long long nr, lo, slice;
    if (sscanf(p, "entry %31s %lld %lld %31s %lld %1023s", coll, &nr, &lo, maxs, &slice, plan) != 6)
      return bad(t, f, path, ln, "malformed line");
    int c = -1;
    for (int k = 0; k < SCHEDC_COLLECTIVE_COUNT_; k++)
      if (!strcmp(coll, schedc_collective_name((schedc_collective)k))) c = k;
    if (c < 0) return bad(t, f, path, ln, "unknown collective");
    char *end;
    long long hi = strcmp(maxs, "inf") ? strtoll(maxs, &end, 10) : -1;
    if ((hi >= 0 && *end) || lo < 0 || (hi >= 0 && hi < lo) || slice < 0 || nr < 1)
      return bad(t, f, path, ln, "bad size range, slice or rank count");
    if (nr != nranks) continue;
    sc_tuneentry *e = realloc(t->e, (size_t)(t->n + 1) * sizeof *e);
    if (!e) { sc_tuning_free(t); fclose(f); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
    t->e = e;
    e = &t->e[t->n];
    memset(e, 0, sizeof *e);
    char full[2100];
    snprintf(full, sizeof full, "%s%s", plan[0] == '/' ? "" : dir, plan);
    if (schedc_plan_load(full, &e->plan) != SCHEDC_OK) {
      char msg[3000];
      snprintf(msg, sizeof msg, "plan %s: %s", full, schedc_errmsg());
      return bad(t, f, path, ln, msg);
    }
    t->n++;
    e->coll = c;
    e->lo = (size_t)lo;
    e->hi = hi < 0 ? SIZE_MAX : (size_t)hi;
    e->slice = (size_t)slice;
    schedc_plan_info in = SCHEDC_PLAN_INFO_INIT;
    schedc_plan_get_info(e->plan, &in);
    if ((int)in.collective != c || in.nranks != nranks) return bad(t, f, path, ln, "the plan's collective or rank count differs");
    e->root = in.root;
  }
  fclose(f);
  if (!seen_header) return bad(t, NULL, path, ln, "empty file");
  return SCHEDC_OK;
}

/* The layout a tuning table records (its `hosts` line) and a communicator is checked against:
 * kept here, beside that check, so hosts.c (which calls the check) needs nothing back from it. */
uint64_t schedc_hosts_fingerprint(int nranks, const int *host_of) {
  if (nranks < 1 || !host_of) return 0;
  uint64_t h = sc_fnv(SC_FNV_INIT, "hosts", 5);
  h = sc_fnv(h, &nranks, sizeof nranks);
  for (int r = 0; r < nranks; r++) {
    int32_t v = host_of[r];
    if (v < 0 || v > r) return 0; /* numbered as they appear: never above the rank */
    h = sc_fnv(h, &v, sizeof v);
  }
  return h;
}

schedc_status sc_tuning_check_hosts(const sc_tuning *t, int nranks, const int *host_of) {
  if (!t->hosts_fp) return SCHEDC_OK;
  int *one = host_of ? NULL : calloc((size_t)nranks, sizeof *one);
  if (!host_of && !one) return sc_err(SCHEDC_ENOMEM, "out of memory");
  const int *h = host_of ? host_of : one;
  uint64_t mine = schedc_hosts_fingerprint(nranks, h);
  int hosts = 0;
  for (int r = 0; r < nranks; r++) hosts = h[r] + 1 > hosts ? h[r] + 1 : hosts;
  free(one);
  if (mine == t->hosts_fp) return SCHEDC_OK;
  return sc_err(SCHEDC_EMISMATCH, "%s:%d: this tuning table was measured with its ranks laid out on hosts as %016llx; "
                "this communicator's %d ranks are on %d host%s (layout %016llx): run schedc tune --backend mpi on this "
                "layout", t->path, t->hosts_line, (unsigned long long)t->hosts_fp, nranks, hosts, hosts == 1 ? "" : "s",
                (unsigned long long)mine);
}

const sc_tuneentry *sc_tuning_pick(const sc_tuning *t, int coll, int root, size_t bytes) {
  for (int i = 0; i < t->n; i++) {
    const sc_tuneentry *e = &t->e[i];
    if (e->coll == coll && e->root == root && bytes >= e->lo && bytes <= e->hi) return e;
  }
  return NULL;
}
