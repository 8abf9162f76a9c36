/*
 * integrity.c — digest verification after a collective and the replica-check API. Every rank
 * provably ends allreduce / allgather / broadcast with the same bits, so comparing a 64-bit
 * digest across ranks detects any corruption of a result exactly: no tolerance, no false alarm.
 * A corruption that reaches every rank alike (a wrong partial sum inside a reduce-scatter) is
 * not visible to a digest: that needs per-transfer checksums.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "err.h"
#include "kernels.h"

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
      fprintf(stderr, "schedc: warning: %s: rank(s) %s held a result differing from the majority (digest %016llx); "
              "repaired from rank %d\n", cn, bad, (unsigned long long)dg[root], root);
    return SCHEDC_OK;
  }
  char mine[48] = "";
  if (me >= 0) snprintf(mine, sizeof mine, "; this rank's is %016llx", (unsigned long long)dg[me]);
  return sc_err(SCHEDC_ECORRUPT, "%s: silent corruption: rank(s) %s hold a result that differs from the majority "
                "(%d of %d ranks agree on digest %016llx%s)", cn, bad, n - nbad, n, (unsigned long long)dg[root], mine);
}

long sc_flipout_pos(const schedc_comm *c, size_t bytes) {
  return c->inj.flipout_rank == c->rank && bytes ? (long)((c->seq * 7919) % bytes) : -1;
}

void sc_flipout(schedc_comm *c, void *buf, size_t bytes) {
  long at = sc_flipout_pos(c, bytes);
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
  fprintf(stderr, "schedc: warning: %s: %s; %s\n", cn, what, action);
}

/* Per rank: the result digest and the first corrupted transfer it received (5 words). */
enum { REC = 5 };

schedc_status sc_integrity_check(schedc_comm *c, const char *cn, void *buf, size_t bytes, int same_bits) {
  int dig = same_bits && (c->verify & SC_V_DIGEST);
  int chk = (c->verify & SC_V_CHECKSUM) != 0;
  if (!dig && !chk) return SCHEDC_OK;
  int n = c->nranks;
  uint64_t *all = malloc((size_t)n * REC * sizeof *all), *dg = calloc((size_t)n, sizeof *dg);
  if (!all || !dg) {
    free(all);
    free(dg);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  const sc_corrupt *b = &c->bad;
  /* how the digest was taken, kept before the internal calls below reset it */
  int kind = c->have_digest;
  sc_dslice dsl = c->dsl;
  uint64_t mine[REC] = {dig ? (kind ? c->digest : sc_verify_digest(NULL, buf, bytes)) : 0,
                        (uint64_t)b->found << 32 | b->line, (uint64_t)b->step << 32 | b->chunk,
                        (uint64_t)b->src << 32 | b->dst, (uint64_t)b->got << 32 | b->want};
  schedc_status st = exchange(c, mine, all, REC);
  for (int r = 0; r < n && st == SCHEDC_OK; r++) {
    const uint64_t *o = all + (size_t)r * REC;
    dg[r] = o[0];
    if (o[1] >> 32) { /* the lowest rank's report, the same message on every rank */
      sc_corrupt rb = {1, (uint32_t)(o[2] >> 32), (uint32_t)o[2], (uint32_t)(o[3] >> 32), (uint32_t)o[3],
                       (uint32_t)o[1], (uint32_t)(o[4] >> 32), (uint32_t)o[4]};
      st = sc_corrupt_error(cn, &rb, c->file ? c->file : "?");
    }
  }
  int nbad = 0, root = st == SCHEDC_OK && dig ? sc_digest_majority(dg, n, &nbad) : 0;
  if (nbad && c->repair) {
    st = sc_rebroadcast(c, buf, bytes, root);
    uint64_t again = kind == 2 ? sc_sliced_digest(buf, &dsl) : sc_verify_digest(NULL, buf, bytes);
    if (st == SCHEDC_OK && again != dg[root])
      st = sc_err(SCHEDC_ECORRUPT, "%s: repair failed on rank %d", cn, c->rank);
  }
  if (nbad && st == SCHEDC_OK) st = sc_digest_outcome(cn, dg, n, c->rank, root, c->repair);
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
