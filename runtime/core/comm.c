/*
 * comm.c — the communicator head: options (and the environment where they leave a setting to
 * it), its scratch, its free. The calls made on it are dispatch.c's (below verification) and
 * api.c's (the public collectives). Nothing here knows which backend it holds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm.h"
#include "crc.h"
#include "err.h"
#include "hash.h"
#include "kernels.h"
#include "cpufeat.h"
#include "params.h"
#include "plan.h"

double sc_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Does an options struct of opts->size bytes hold the whole field that ends at `end`? */
#define HAS_FIELD(o, field) ((o)->size >= offsetof(schedc_comm_opts, field) + sizeof (o)->field)

schedc_status sc_comm_new(const sc_backend *be, int rank, int nranks, const schedc_comm_opts *opts,
                          schedc_comm **out) {
  return sc_comm_new_inj(be, rank, nranks, opts, NULL, out);
}

schedc_status sc_comm_new_inj(const sc_backend *be, int rank, int nranks, const schedc_comm_opts *opts,
                              const sc_inject *inj, schedc_comm **out) {
  *out = NULL;
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  if (opts) {
    if (opts->size < sizeof(size_t) || opts->size > sizeof o)
      return sc_err(SCHEDC_EINVAL, "opts->size is %zu; set it with SCHEDC_COMM_OPTS_INIT", opts->size);
    memcpy(&o, opts, opts->size); /* fields past opts->size keep their defaults */
  }
  if (nranks < 1 || nranks > 65536) return sc_err(SCHEDC_EINVAL, "nranks %d out of range [1, 65536]", nranks);
  if (rank < 0 || rank >= nranks) return sc_err(SCHEDC_EINVAL, "rank %d out of range [0, %d)", rank, nranks);
  if (o.timeout_s < 0) return sc_err(SCHEDC_EINVAL, "timeout_s %g is negative", o.timeout_s);
  /* the environment only where the options leave a setting to it (defaults: params.h) */
  double timeout_s = o.timeout_s;
  size_t slice_bytes = o.slice_bytes;
  schedc_status st = o.timeout_s > 0 ? SCHEDC_OK : sc_param_double(SC_P_SCHEDC_TIMEOUT, &timeout_s);
  if (st == SCHEDC_OK && !o.slice_bytes) st = sc_param_size(SC_P_SCHEDC_SLICE, &slice_bytes);
  int v = o.verify;
  if (st == SCHEDC_OK && !v) {
    static const int by_word[] = {SCHEDC_VERIFY_NONE, SCHEDC_VERIFY_DIGEST, SCHEDC_VERIFY_CHECKSUM, SCHEDC_VERIFY_FULL,
                                  SCHEDC_VERIFY_EXACT};
    int w = 0; /* SCHEDC_VERIFY's words, in the list's order */
    st = sc_param_enum(SC_P_SCHEDC_VERIFY, &w);
    v = by_word[w];
  }
  if (st != SCHEDC_OK) return st;
  if (v != SCHEDC_VERIFY_NONE && v != SCHEDC_VERIFY_DIGEST && v != SCHEDC_VERIFY_CHECKSUM && v != SCHEDC_VERIFY_FULL &&
      v != SCHEDC_VERIFY_EXACT)
    return sc_err(SCHEDC_EINVAL, "opts->verify %d: use SCHEDC_VERIFY_NONE, _DIGEST, _CHECKSUM, _FULL or _EXACT", o.verify);
  int repair = 0; /* SCHEDC_REPAIR's words: 0, 1 */
  if (!o.repair && (st = sc_param_enum(SC_P_SCHEDC_REPAIR, &repair)) != SCHEDC_OK) return st;
  if ((st = sc_simd_check()) != SCHEDC_OK) return st; /* SCHEDC_SIMD: chosen before main, refused here */
  schedc_comm *c = calloc(1, sizeof *c);
  if (!c) return sc_err(SCHEDC_ENOMEM, "out of memory");
  c->be = be;
  c->rank = rank;
  c->nranks = nranks;
  c->nhosts = 1;
  c->timeout_s = timeout_s;
  c->slice_bytes = slice_bytes;
  c->init_plan = opts && HAS_FIELD(opts, plan) ? o.plan : NULL;
  /* exact mode's identity check: alone (exact), or with either of the others (as it always was) */
  c->verify = (v & SCHEDC_VERIFY_DIGEST ? SC_V_DIGEST : 0) | (v & SCHEDC_VERIFY_CHECKSUM ? SC_V_CHECKSUM : 0) |
              (v != SCHEDC_VERIFY_NONE ? SC_V_EXACT : 0);
  c->repair = o.repair || repair;
  if (inj) c->inj = *inj;
  else st = sc_inject_parse(sc_param_str(SC_P_SCHEDC_INJECT), &c->inj);
  if (st == SCHEDC_OK) st = sc_inject_check(&c->inj, nranks, be ? be->name : NULL, be ? be->caps : 0);
  const char *topo = sc_param_str(SC_P_SCHEDC_TOPOLOGY);
  if (st == SCHEDC_OK && topo && *topo && !(c->topology = strdup(topo))) st = sc_err(SCHEDC_ENOMEM, "out of memory");
  const char *tun = o.tuning ? o.tuning : sc_param_str(SC_P_SCHEDC_TUNING);
  if (st == SCHEDC_OK && tun && *tun) st = sc_tuning_load(tun, nranks, &c->tuning);
  /* a table bound to a layout of hosts: checked here for a backend whose ranks share one host,
   * when the hosts are learned for one that spans hosts (sc_comm_set_hosts) */
  if (st == SCHEDC_OK && !(be && be->caps & SC_CAP_HOSTS)) st = sc_tuning_check_hosts(&c->tuning, nranks, NULL);
  if (st != SCHEDC_OK) {
    sc_tuning_free(&c->tuning);
    free(c->topology);
    free(c);
    return st;
  }
  *out = c;
  return SCHEDC_OK;
}

uint64_t sc_comm_layout_word(const schedc_comm *c) {
  return c->topology ? sc_fnv_str(SC_FNV_INIT, c->topology) : 0;
}

schedc_status sc_layout_mismatch(const schedc_comm *c, int r, uint64_t theirs) {
  return sc_err(SCHEDC_EMISMATCH, "rank %d and rank %d disagree on the topology (SCHEDC_TOPOLOGY) at init (rank %d: %s; "
                "rank %d: %s): default plans would differ", c->rank, r, c->rank, c->topology ? c->topology : "unset", r,
                theirs ? "another" : "unset");
}

void *sc_scratch(schedc_comm *c, size_t bytes) {
  if (bytes > c->scratch_cap) {
    void *p = realloc(c->scratch, bytes);
    if (!p) { sc_err(SCHEDC_ENOMEM, "out of memory for a %zu-byte working buffer", bytes); return NULL; }
    c->scratch = p;
    c->scratch_cap = bytes;
  }
  return c->scratch;
}

void sc_comm_release(schedc_comm *c) {
  free(c->parent);
  free(c->host_of);
  for (int i = 0; i < c->ndefplan; i++) schedc_plan_free(c->defplan[i].plan);
  sc_tuning_free(&c->tuning);
  free(c->topology);
  free(c->scratch);
  free(c);
}

void schedc_comm_free(schedc_comm *c) {
  if (!c) return;
  sc_mem_release_all(c); /* peers that mapped a region keep their mapping until they let it go */
  if (c->be_data) c->be->free(c);
  sc_comm_release(c);
}

/* The options a shrunk communicator inherits when the caller gives none: the old one's settings
 * as they were resolved (timeout, slice, verification, repair); the rest as at init. */
static schedc_comm_opts inherited_opts(const schedc_comm *c) {
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = c->timeout_s;
  o.slice_bytes = c->slice_bytes;
  int dg = (c->verify & SC_V_DIGEST) != 0, ck = (c->verify & SC_V_CHECKSUM) != 0;
  o.verify = dg && ck ? SCHEDC_VERIFY_FULL : dg ? SCHEDC_VERIFY_DIGEST : ck ? SCHEDC_VERIFY_CHECKSUM
           : c->verify & SC_V_EXACT ? SCHEDC_VERIFY_EXACT : SCHEDC_VERIFY_NONE;
  o.repair = c->repair;
  return o;
}

schedc_status schedc_comm_shrink(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "schedc_comm_shrink: newcomm is NULL");
  *out = NULL;
  if (!c) return sc_err(SCHEDC_EINVAL, "schedc_comm_shrink: comm is NULL");
  if (!c->be->shrink)
    return sc_err(SCHEDC_EUNAVAIL, "schedc_comm_shrink: the %s backend cannot shrink a communicator (threads, shm and net "
                  "can); restart the job from a checkpoint instead (docs/recovery.md)", c->be->name);
  if (c->shrunk)
    return sc_err(SCHEDC_EINVAL, "schedc_comm_shrink: rank %d already shrank this communicator (once per "
                  "communicator: shrink the one it gave when another rank fails)", c->rank);
  schedc_comm_opts o = inherited_opts(c);
  c->shrunk = 1;
  return c->be->shrink(c, opts ? opts : &o, out);
}

int schedc_comm_parent_rank(const schedc_comm *c, int rank) {
  if (!c || rank < 0 || rank >= c->nranks) return -1;
  return c->parent ? c->parent[rank] : rank;
}

int schedc_comm_rank(const schedc_comm *c) { return c ? c->rank : -1; }
int schedc_comm_nranks(const schedc_comm *c) { return c ? c->nranks : -1; }
uint64_t schedc_digest(const void *buf, size_t bytes) { return sc_digest64(buf, bytes); }
uint32_t schedc_crc32c(uint32_t crc, const void *buf, size_t bytes) {
  if (!bytes) return crc;
  return sc_crc32c_combine(crc, sc_crc32c(buf, bytes), bytes);
}
uint32_t schedc_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b) {
  return len_b ? sc_crc32c_combine(crc_a, crc_b, len_b) : crc_a;
}

const char *sc_checks_name(uint32_t checks, char *buf, size_t cap) {
  const char *v = (checks & 3) == 3 ? "full" : checks & SC_V_DIGEST ? "digest" : checks & SC_V_CHECKSUM ? "checksum"
                 : checks & SC_V_EXACT ? "exact" : "none";
  snprintf(buf, cap, "SCHEDC_VERIFY=%s%s", v, checks & 4 ? " with repair" : "");
  return buf;
}
