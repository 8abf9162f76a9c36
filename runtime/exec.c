/*
 * exec.c — the CPU executor for shared-memory transports (threads, shm). Each rank runs only its
 * own write groups (prog.h), slice by slice: wait for the sources' versions (RAW) and for the
 * readers of the cell's old value (WAR), compute the fused chain in one pass, then publish.
 * There is no barrier between steps, so independent steps overlap and slices pipeline between
 * ranks; the values are those of the bulk-synchronous step semantics because every read waits
 * for exactly the version the step semantics name, and no write lands before its readers are
 * done. Slice size changes only scheduling, never arithmetic.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm.h"
#include "err.h"
#include "kernels.h"

#define MAX_CHAIN 64 /* sources combined per kernel call; longer chains run in pieces */

static void sleep_us(unsigned us) {
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

/* Fault injection at the start of a step of this rank's program. */
static schedc_status inject_step(schedc_comm *c, uint32_t step, const char *coll) {
  const sc_inject *in = &c->inj;
  if (in->kill_rank == c->rank && (int)step >= in->kill_step) {
    if (c->backend == SCHEDC_BACKEND_THREADS) {
      sc_fail(c, SC_DEAD, "rank %d was killed by fault injection at step %u", c->rank, step);
      return sc_err(SCHEDC_EPEER, "%s: rank %d killed by fault injection (SCHEDC_INJECT) at step %u", coll,
                    c->rank, step);
    }
    raise(SIGKILL); /* a process: die for real, as a crash would */
  }
  if (in->delay_rank == c->rank && in->delay_us) sleep_us((unsigned)in->delay_us);
  if (in->jitter_us) {
    uint64_t h = (uint64_t)in->jitter_seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)c->rank << 32) ^ step ^ c->seq * 31;
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ull; h ^= h >> 32;
    sleep_us((unsigned)(h % (in->jitter_us + 1)));
  }
  return SCHEDC_OK;
}

schedc_status sc_exec(schedc_comm *c, const sc_execargs *a) {
  const sc_prog *p = a->prog;
  const sc_rankprog *rp = &p->rank[c->rank];
  sc_shared *sh = c->sh;
  size_t esz = schedc_dtype_size(a->acc), K = a->count;
  uint32_t C = p->nchunks;
  size_t maxchunk = (K + C - 1) / C;
  /* Slice length in elements: the communicator's slice, at least 64 elements, and few enough
   * slices that every cell's counters fit. */
  size_t se = c->slice_bytes / esz;
  if (se < 64) se = 64;
  size_t nsl = maxchunk ? (maxchunk + se - 1) / se : 1;
  if ((size_t)C * nsl > sh->ctr_per_rank) {
    nsl = sh->ctr_per_rank / C;
    if (nsl == 0) return sc_err(SCHEDC_EUNAVAIL, "plan has %u chunks; this communicator holds counters for %u",
                                C, sh->ctr_per_rank);
    se = (maxchunk + nsl - 1) / nsl;
  }
  if (nsl == 0) nsl = 1;
  c->ctr_used[a->parity] = (size_t)C * nsl; /* what the next reset of this parity must clear */
  /* Temps for phase A groups: one chunk each. */
  size_t need = (size_t)rp->ntemp * maxchunk * esz;
  if (need > c->temp_cap) {
    void *t = realloc(c->temp, need);
    if (!t) return sc_err(SCHEDC_ENOMEM, "out of memory for %zu bytes of temporaries", need);
    c->temp = t;
    c->temp_cap = need;
  }
  _Atomic uint32_t *myver = sc_ctr(sh, a->parity, SC_VER, (uint32_t)c->rank);
  _Atomic uint32_t *myreads = sc_ctr(sh, a->parity, SC_READS, (uint32_t)c->rank);
  char *W = c->peer[c->rank];
  const void *srcp[MAX_CHAIN];
  sc_waitctx w = {c, a->coll, -1, 0, 0, 0, sc_now() + c->timeout_s};
  uint32_t last_step = UINT32_MAX;
  schedc_status st = SCHEDC_OK;
  for (uint32_t gi = 0; gi < rp->ng && st == SCHEDC_OK; gi++) {
    const sc_group *g = &p->groups[rp->g_off + gi];
    const sc_src *src = &p->srcs[g->src_off];
    if (g->step != last_step) {
      last_step = g->step;
      if ((st = inject_step(c, g->step, a->coll)) != SCHEDC_OK) break;
    }
    /* Another rank failed: stop before touching peers' buffers, which may be going away. */
    if (atomic_load_explicit(&sh->failed, memory_order_acquire)) {
      w.peer = -1;
      w.step = g->step;
      w.chunk = g->chunk;
      w.line = g->line;
      st = sc_peer_failure(&w);
      break;
    }
    size_t lo, hi;
    sc_chunk_range(K, C, g->chunk, &lo, &hi);
    w.step = g->step;
    w.chunk = g->chunk;
    w.line = g->line;
    char *tmp = (char *)c->temp + (size_t)g->temp * maxchunk * esz;
    for (size_t j = 0; j < nsl && st == SCHEDC_OK; j++) {
      size_t slo = lo + j * se, shi = slo + se < hi ? slo + se : hi;
      if (slo >= hi) break; /* both sides skip empty slices alike */
      size_t k = (size_t)g->chunk * nsl + j, len = shi - slo;
      if (g->phase != SC_PH_C) {
        for (uint32_t s = 0; s < g->nsrc && st == SCHEDC_OK; s++) {
          w.peer = (int)src[s].rank;
          st = sc_wait_ge(sc_ctr(sh, a->parity, SC_VER, src[s].rank) + k, src[s].version, &w);
        }
      }
      if (st == SCHEDC_OK && g->phase != SC_PH_A && (atomic_load(&myreads[k]) & 0x7fffffffu) < g->wait_reads) {
        w.peer = -1; /* some reader of this cell */
        st = sc_wait_ge(&myreads[k], g->wait_reads, &w);
      }
      if (st != SCHEDC_OK) break;
      char *dst = g->phase == SC_PH_A ? tmp + (slo - lo) * esz : W + slo * esz;
      if (g->phase == SC_PH_C) {
        memcpy(W + slo * esz, tmp + (slo - lo) * esz, len * esz);
      } else if (g->copy) {
        memcpy(dst, c->peer[src[0].rank] + slo * esz, len * esz);
      } else {
        const char *acc = W + slo * esz;
        for (uint32_t s0 = 0; s0 < g->nsrc; s0 += MAX_CHAIN) {
          int n = (int)(g->nsrc - s0 < MAX_CHAIN ? g->nsrc - s0 : MAX_CHAIN);
          for (int s = 0; s < n; s++) srcp[s] = c->peer[src[s0 + (uint32_t)s].rank] + slo * esz;
          sc_reduce_chain(a->acc, a->op, dst, acc, srcp, n, len);
          acc = dst;
        }
      }
      if (g->phase != SC_PH_C)
        for (uint32_t s = 0; s < g->nsrc; s++) sc_bump(sc_ctr(sh, a->parity, SC_READS, src[s].rank) + k);
      if (g->phase != SC_PH_A) sc_publish(&myver[k], g->version);
    }
  }
  /* A rank with no writes left (a broadcast root) still "reaches" the end of the plan. */
  if (st == SCHEDC_OK && last_step != p->nsteps) st = inject_step(c, p->nsteps, a->coll);
  /* Drain: peers may still be reading this rank's cells; the caller's buffer must stay intact
   * until every read the plan makes of it is done. */
  for (uint32_t ch = 0; ch < C && st == SCHEDC_OK; ch++) {
    size_t lo, hi;
    sc_chunk_range(K, C, ch, &lo, &hi);
    w.step = p->nsteps;
    w.chunk = ch;
    w.line = 0;
    for (size_t j = 0; j < nsl && st == SCHEDC_OK; j++) {
      if (lo + j * se >= hi) break;
      size_t k = (size_t)ch * nsl + j;
      if ((atomic_load(&myreads[k]) & 0x7fffffffu) >= rp->final_reads[ch]) continue;
      w.peer = -1;
      st = sc_wait_ge(&myreads[k], rp->final_reads[ch], &w);
    }
  }
  return st;
}
