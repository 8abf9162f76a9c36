/*
 * integrity.c — verification after a collective (sc_verdict: the one verdict every backend
 * reaches) and the replica-check API. Every rank
 * provably ends allreduce / allgather / broadcast with the same bits, so comparing a 64-bit
 * digest across ranks detects any corruption of a result exactly: no tolerance, no false alarm.
 * A corruption that reaches every rank alike (a wrong partial sum inside a reduce-scatter) is
 * not visible to a digest: that needs per-transfer checksums.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "integrity.h"
#include "err.h"
#include "kernels.h"
#include "log.h"

/* The ranks' words[n] each, gathered by an internal call (never verified itself). */
static schedc_status exchange(schedc_comm *c, const uint64_t *mine, uint64_t *all, size_t n) {
  return sc_coll(c, SCHEDC_ALLGATHER, mine, all, n, SCHEDC_I64, SCHEDC_SUM, 0, NULL, SC_CALL_INTERNAL);
}

/* The ranks' digests of their buffers. */
static schedc_status gather(schedc_comm *c, const void *buf, size_t bytes, uint64_t *all) {
  uint64_t d = sc_verify_digest(NULL, buf, bytes);
  return exchange(c, &d, all, 1);
}

int sc_digest_majority(const uint64_t *all, int n, int *nbad) {
  int best = 0, bestcount = 0;
  for (int r = 0; r < n; r++) {
    int k = 0;
    for (int q = 0; q < n; q++) k += all[q] == all[r];
    if (k > bestcount) { best = r; bestcount = k; }
  }
  *nbad = n - bestcount;
  return best;
}

/* Broadcast `bytes` of buf from root, as 2-byte elements (moved bit for bit) plus a tail byte. */
schedc_status sc_rebroadcast(schedc_comm *c, void *buf, size_t bytes, int root) {
  schedc_status st = sc_coll(c, SCHEDC_BROADCAST, buf, buf, bytes / 2, SCHEDC_F16, SCHEDC_SUM, root, NULL,
                             SC_CALL_INTERNAL);
  if (st == SCHEDC_OK && (bytes & 1)) {
    unsigned char tail[2] = {((unsigned char *)buf)[bytes - 1], 0};
    st = sc_coll(c, SCHEDC_BROADCAST, tail, tail, 1, SCHEDC_F16, SCHEDC_SUM, root, NULL, SC_CALL_INTERNAL);
    ((unsigned char *)buf)[bytes - 1] = tail[0];
  }
  return st;
}

static void list_bad(const uint64_t *all, int n, uint64_t good, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int r = 0; r < n && len + 16 < cap; r++)
    if (all[r] != good) len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? ", " : "", r);
}

schedc_status sc_digest_outcome(const char *cn, const uint64_t *dg, int n, int me, int root, int repaired) {
  int nbad = 0;
  for (int r = 0; r < n; r++) nbad += dg[r] != dg[root];
  if (!nbad) return SCHEDC_OK;
  char bad[256];
  list_bad(dg, n, dg[root], bad, sizeof bad);
  if (repaired) {
    if (me == root || me < 0)
      sc_log(SCHEDC_LOG_WARN, "%s: rank(s) %s held a result differing from the majority (digest %016llx); "
             "repaired from rank %d", cn, bad, (unsigned long long)dg[root], root);
    return SCHEDC_OK;
  }
  char mine[48] = "";
  if (me >= 0) snprintf(mine, sizeof mine, "; this rank's is %016llx", (unsigned long long)dg[me]);
  return sc_err(SCHEDC_ECORRUPT, "%s: silent corruption: rank(s) %s hold a result that differs from the majority "
                "(%d of %d ranks agree on digest %016llx%s)", cn, bad, n - nbad, n, (unsigned long long)dg[root], mine);
}

long sc_flipout_pos(const schedc_comm *c, const sc_call *k, size_t bytes) {
  return c->inj.flipout_rank == c->rank && sc_call_injects(k) && bytes ? (long)((k->seq * 7919) % bytes) : -1;
}

void sc_flipout(const schedc_comm *c, const sc_call *k, void *buf, size_t bytes) {
  long at = sc_flipout_pos(c, k, bytes);
  if (at >= 0) ((unsigned char *)buf)[at] ^= 0x10; /* injected */
}

uint64_t sc_sliced_digest(const void *buf, const sc_dslice *s) {
  uint64_t h = sc_dslice_init(s->K);
  for (uint32_t ch = 0; ch < s->C; ch++) {
    size_t lo, hi;
    sc_chunk_range(s->K, s->C, ch, &lo, &hi);
    for (size_t j = 0; j < s->nsl && lo + j * s->se < hi; j++) {
      size_t slo = lo + j * s->se, shi = slo + s->se < hi ? slo + s->se : hi;
      h = sc_dslice_step(h, sc_crc32c((const char *)buf + slo * s->esz, (shi - slo) * s->esz));
    }
  }
  return h;
}

/* What went wrong with a transfer, in the words of both the error and the warning. */
static void describe(char *out, size_t cap, const sc_corrupt *b, const char *file) {
  snprintf(out, cap, "the payload rank %u sent to rank %u at step %u (%s:%u, chunk %u) failed its %s "
           "(0x%08x, sent 0x%08x)", b->src, b->dst, b->step, file, b->line, b->chunk,
           b->found == 2 ? "checksum (low 32 bits of the 64-bit sum)" : "CRC32C check", b->got, b->want);
}

schedc_status sc_corrupt_error(const char *cn, const sc_corrupt *b, const char *file) {
  char what[512];
  describe(what, sizeof what, b, file);
  return sc_err(SCHEDC_ECORRUPT, "%s: corrupted transfer: %s; the result is wrong on the ranks that depend on it "
                "(SCHEDC_REPAIR=1 sends it again)", cn, what);
}

void sc_corrupt_warn(const char *cn, const sc_corrupt *b, const char *file, const char *action) {
  char what[512];
  describe(what, sizeof what, b, file);
  sc_log(SCHEDC_LOG_WARN, "%s: %s; %s", cn, what, action);
}

void sc_vrec_pack(uint64_t w[SC_VREC_WORDS], uint64_t digest, const sc_corrupt *b) {
  w[0] = digest;
  w[1] = (uint64_t)b->found << 32 | b->line;
  w[2] = (uint64_t)b->step << 32 | b->chunk;
  w[3] = (uint64_t)b->src << 32 | b->dst;
  w[4] = (uint64_t)b->got << 32 | b->want;
}

schedc_status sc_verdict(const char *cn, const char *file, const uint64_t *all, int n, int me, int dig, int repair,
                         uint64_t *dg, int *fix) {
  *fix = -1;
  for (int r = 0; r < n; r++) dg[r] = all[(size_t)r * SC_VREC_WORDS];
  for (int r = 0; r < n; r++) {
    const uint64_t *o = all + (size_t)r * SC_VREC_WORDS;
    if (o[1] >> 32) { /* the lowest rank's report, the same message on every rank */
      sc_corrupt b = {(uint32_t)(o[1] >> 32), (uint32_t)(o[2] >> 32), (uint32_t)o[2], (uint32_t)(o[3] >> 32),
                      (uint32_t)o[3], (uint32_t)o[1], (uint32_t)(o[4] >> 32), (uint32_t)o[4]};
      return sc_corrupt_error(cn, &b, file ? file : "?");
    }
  }
  int nbad = 0, root = dig ? sc_digest_majority(dg, n, &nbad) : 0;
  if (!nbad) return SCHEDC_OK;
  if (!repair) return sc_digest_outcome(cn, dg, n, me, root, 0);
  *fix = root;
  return SCHEDC_OK;
}

schedc_status sc_repaired(const char *cn, int rank, uint64_t again, uint64_t want) {
  return again == want ? SCHEDC_OK : sc_err(SCHEDC_ECORRUPT, "%s: repair failed on rank %d", cn, rank);
}

schedc_status sc_integrity_check(schedc_comm *c, const sc_call *k, const sc_result *res) {
  int dig = sc_call_digests(k), chk = sc_call_checks(k);
  if (!dig && !chk) return SCHEDC_OK;
  int n = c->nranks;
  /* the result every rank holds alike (none for reduce_scatter and reduce) */
  size_t bytes = dig ? sc_same_bits_elems(k->coll, k->count, n) * schedc_dtype_size(k->dtype) : 0;
  uint64_t *all = malloc((size_t)n * SC_VREC_WORDS * sizeof *all), *dg = calloc((size_t)n, sizeof *dg);
  if (!all || !dg) {
    free(all);
    free(dg);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  uint64_t mine[SC_VREC_WORDS];
  sc_vrec_pack(mine, dig ? (res->have_digest ? res->digest : sc_verify_digest(NULL, k->recv, bytes)) : 0, &res->bad);
  int fix = -1;
  schedc_status st = exchange(c, mine, all, SC_VREC_WORDS);
  if (st == SCHEDC_OK) st = sc_verdict(k->cn, k->file, all, n, c->rank, dig, sc_call_repairs(k), dg, &fix);
  if (st == SCHEDC_OK && fix >= 0) {
    st = sc_rebroadcast(c, k->recv, bytes, fix);
    uint64_t again = res->have_digest == 2 ? sc_sliced_digest(k->recv, &res->dsl) : sc_verify_digest(NULL, k->recv, bytes);
    if (st == SCHEDC_OK) st = sc_repaired(k->cn, c->rank, again, dg[fix]);
    if (st == SCHEDC_OK) st = sc_digest_outcome(k->cn, dg, n, c->rank, fix, 1);
  }
  free(all);
  free(dg);
  return st;
}

schedc_status schedc_replicas_agree(schedc_comm *c, const void *buf, size_t bytes, int *ok) {
  if (!c || !ok || (!buf && bytes)) return sc_err(SCHEDC_EINVAL, "comm, buf or ok is NULL");
  uint64_t *all = malloc((size_t)c->nranks * sizeof *all);
  if (!all) return sc_err(SCHEDC_ENOMEM, "out of memory");
  schedc_status st = gather(c, buf, bytes, all);
  int nbad = 0;
  if (st == SCHEDC_OK) sc_digest_majority(all, c->nranks, &nbad);
  *ok = st == SCHEDC_OK && nbad == 0;
  free(all);
  return st;
}

schedc_status schedc_replicas_resync(schedc_comm *c, void *buf, size_t bytes, int *fixed) {
  if (!c || (!buf && bytes)) return sc_err(SCHEDC_EINVAL, "comm or buf is NULL");
  uint64_t *all = malloc((size_t)c->nranks * sizeof *all);
  if (!all) return sc_err(SCHEDC_ENOMEM, "out of memory");
  schedc_status st = gather(c, buf, bytes, all);
  int nbad = 0, root = st == SCHEDC_OK ? sc_digest_majority(all, c->nranks, &nbad) : 0;
  if (st == SCHEDC_OK && nbad) st = sc_rebroadcast(c, buf, bytes, root);
  if (fixed) *fixed = st == SCHEDC_OK ? nbad : 0;
  free(all);
  return st;
}
