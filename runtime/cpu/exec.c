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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "err.h"
#include "kernels.h"

#define MAX_CHAIN 64 /* sources combined per kernel call; longer chains run in pieces */

/* kill:RANK:STEP: this rank dies at `step` (a thread rank returns, marked dead). */
static schedc_status die(schedc_comm *c, uint32_t step, const char *coll) {
  if (sc_cpu_of(c)->tr->in_process) {
    sc_fail(c, SC_DEAD, "rank %d was killed by fault injection at step %u", c->rank, step);
    return sc_err(SCHEDC_EPEER, "%s: rank %d killed by fault injection (SCHEDC_INJECT) at step %u", coll, c->rank, step);
  }
  raise(SIGKILL); /* a process: die for real, as a crash would */
  return SCHEDC_EPEER;
}

schedc_status sc_exec_die_failed(schedc_comm *c, const char *coll, schedc_status st) {
  if (c->inj.kill_rank < 0 || sc_inject_kill_step(&c->inj, c->rank) < 0) return st;
  if (atomic_load(&sc_cpu_of(c)->sh->slots[c->rank].state) == SC_DEAD) return st; /* died already */
  return die(c, 0, coll);
}

/* Fault injection at the start of a step of this rank's program. */
static schedc_status inject_step(schedc_comm *c, uint32_t step, const char *coll) {
  return sc_inject_step(&c->inj, c->rank, step, c->seq) ? die(c, step, coll) : SCHEDC_OK;
}

/* Slice length in elements: the communicator's slice, at least 64 elements, and few enough
 * slices that every cell's counters fit. -1 when even one slice per chunk does not fit. */
int sc_exec_slicing(const schedc_comm *c, size_t K, uint32_t C, size_t esz, size_t *se_out, size_t *nsl_out) {
  size_t maxchunk = (K + C - 1) / C;
  size_t se = sc_cpu_of(c)->call_slice / esz;
  if (se < 64) se = 64;
  size_t nsl = maxchunk ? (maxchunk + se - 1) / se : 1;
  if ((size_t)C * nsl > sc_cpu_of(c)->sh->ctr_per_rank) {
    nsl = sc_cpu_of(c)->sh->ctr_per_rank / C;
    if (nsl == 0) return -1;
    se = (maxchunk + nsl - 1) / nsl;
  }
  *se_out = se;
  *nsl_out = nsl ? nsl : 1;
  return 0;
}

void sc_exec_stage_inputs(schedc_comm *c, const sc_prog *p, size_t esz, size_t K, char *W, const char *send,
                          int check, uint8_t *loc, int parity, sc_widening *wide) {
  const char *src = send ? send : W; /* sc_crc32c_copy onto itself only hashes */
  size_t se, nsl, dsz = wide ? schedc_dtype_size(wide->dtype) : esz; /* bytes per element of src */
  uint32_t C = p->nchunks;
  if (sc_exec_slicing(c, K, C, esz, &se, &nsl)) { /* sc_exec refuses the call */
    if (wide) sc_widen(wide, W, src, K, 1);
    else if (src != W) memmove(W, src, K * esz);
    return;
  }
  const sc_rankprog *rp = &p->rank[c->rank];
  _Atomic uint32_t *crc = sc_ctr(sc_cpu_of(c)->sh, parity, SC_CRC, (uint32_t)c->rank);
  for (uint32_t ch = 0; ch < C; ch++) {
    size_t lo, hi;
    sc_chunk_range(K, C, ch, &lo, &hi);
    if (!rp->init_read[ch]) { /* only this rank reads it: from the send buffer, or copied */
      if (loc && src != W) loc[ch] = SC_LOC_SEND;
      else if (wide && hi > lo) sc_widen(wide, W + lo * esz, src + lo * dsz, hi - lo, 1);
      else if (src != W && hi > lo) memmove(W + lo * esz, src + lo * esz, (hi - lo) * esz);
      continue;
    }
    for (size_t j = 0; j < nsl && lo + j * se < hi; j++) {
      size_t slo = lo + j * se, shi = slo + se < hi ? slo + se : hi;
      if (wide) { /* peers read it in the working type: widened as it is staged (never checked) */
        sc_widen(wide, W + slo * esz, src + slo * dsz, shi - slo, 1);
        continue;
      }
      if (!check) {
        if (src != W) sc_copy(W + slo * esz, src + slo * esz, (shi - slo) * esz);
        continue;
      }
      atomic_store_explicit(&crc[(size_t)ch * nsl + j], sc_crc32c_copy(W + slo * esz, src + slo * esz, (shi - slo) * esz),
                            memory_order_relaxed); /* the arrival (release) publishes it */
    }
  }
}

/* Where this rank's cell `ch` holds its current value (element i of the working buffer's layout):
 * the working buffer, the caller's send buffer (initial, never copied) or receive buffer
 * (written there because no peer reads that version). A widened call's send-buffer cells are
 * widened into `scratch` (len elements from i) and read there; its receive-buffer cells hold
 * final versions, which no group reads again. */
static const char *own_cell(const sc_execargs *a, char *W, uint32_t ch, size_t i, size_t esz, size_t len,
                            char *scratch) {
  switch (a->loc ? a->loc[ch] : SC_LOC_W) {
  case SC_LOC_SEND:
    if (a->wide) { /* the first group to widen this cell counts its inputs (a phase A group may
                    * read it again before it is written) */
      sc_widen(a->wide, scratch, a->init + i * schedc_dtype_size(a->wide->dtype), len,
               a->wide->tally && !a->wide->tallied[ch]);
      return scratch;
    }
    return a->init + i * esz;
  case SC_LOC_OUT: return a->out + (i - a->out_lo) * esz;
  default: return W + i * esz;
  }
}

/* flip:RANK:STEP lands on the first transfer out of RANK in STEP, in rank and plan order. */
static void find_flip(schedc_comm *c, const sc_prog *p) {
  sc_cpu_of(c)->flip = (sc_fliptarget){p, -1, 0, 0};
  for (uint32_t r = 0; r < p->nranks; r++)
    for (uint32_t gi = p->rank[r].g_off; gi < p->rank[r].g_off + p->rank[r].ng; gi++) {
      const sc_group *g = &p->groups[gi];
      if (g->step != (uint32_t)c->inj.flip_step || g->phase == SC_PH_C) continue;
      for (uint32_t s = 0; s < g->nsrc; s++)
        if (p->srcs[g->src_off + s].rank == (uint32_t)c->inj.flip_rank) {
          sc_cpu_of(c)->flip = (sc_fliptarget){p, (int)r, gi, s};
          return;
        }
    }
}

/* A copy of the payload with one bit flipped (the injected link fault), or sp if none fits. */
static const char *flipped(schedc_comm *c, const char *sp, size_t bytes, const sc_group *g, const char *coll) {
  if (!bytes) return sp;
  if (bytes > sc_cpu_of(c)->flipbuf_cap) {
    void *b = realloc(sc_cpu_of(c)->flipbuf, bytes);
    if (!b) return sp;
    sc_cpu_of(c)->flipbuf = b;
    sc_cpu_of(c)->flipbuf_cap = bytes;
  }
  memcpy(sc_cpu_of(c)->flipbuf, sp, bytes);
  sc_inject_flip(&c->inj, sc_cpu_of(c)->flipbuf, bytes, coll, c->rank, g->step);
  return sc_cpu_of(c)->flipbuf;
}

/* Source si of group gidx, slice sp, as this rank uses it: the peer's cell, or the corrupted copy
 * when a flip:RANK:STEP injection lands there (flip_first: it may land in this call's slice 0). */
static const char *source_slice(schedc_comm *c, const sc_group *g, uint32_t gidx, uint32_t si, int flip_first,
                                const char *sp, size_t bytes, const char *coll) {
  const sc_fliptarget *f = &sc_cpu_of(c)->flip;
  return flip_first && f->group == gidx && f->src == si ? flipped(c, sp, bytes, g, coll) : sp;
}

/* The CRC32C `from` published for slice k of this call's parity. */
static uint32_t crc_wanted(schedc_comm *c, const sc_execargs *a, uint32_t from, size_t k) {
  return atomic_load_explicit(sc_ctr(sc_cpu_of(c)->sh, a->parity, SC_CRC, from) + k, memory_order_relaxed);
}

/* Checksum mode: the source slice `sp` checked against its sender's CRC32C; with dst, as it is
 * copied there (one pass, checked after the copy: that only wrote this rank's own cell). On a
 * mismatch, with repair, it is read (and copied) again from the sender (`again`: sent again);
 * otherwise the first mismatch of the call is recorded (every rank reports it after the call)
 * and the data is used as it came. Returns the source used; *crc: the CRC32C of what it holds. */
static const char *checked_source(schedc_comm *c, const sc_execargs *a, const sc_group *g, uint32_t from, size_t k,
                                  char *dst, const char *sp, const char *again, size_t bytes, uint32_t *crc) {
  uint32_t want = crc_wanted(c, a, from, k);
  for (int tries = 0;; tries++) {
    uint32_t got = *crc = dst ? sc_crc32c_copy(dst, sp, bytes) : sc_crc32c(sp, bytes);
    if (got == want) return sp;
    sc_corrupt b = {1, g->step, g->chunk, from, (uint32_t)c->rank, g->line, got, want};
    if (c->repair && tries < 2) {
      sc_corrupt_warn(a->coll, &b, a->file, "sent again");
      sp = again;
      continue;
    }
    if (!a->bad->found) *a->bad = b;
    return sp;
  }
}

/* Checksum mode without repair, a one-source reduce: the source's CRC32C taken by the reduce as
 * it used the slice (sc_reduce1_crc), checked afterwards; without repair a corrupted slice is
 * used as it came either way, so only the report is at stake, and it is the same. */
static void checked_after(schedc_comm *c, const sc_execargs *a, const sc_group *g, uint32_t from, size_t k,
                          uint32_t got) {
  uint32_t want = crc_wanted(c, a, from, k);
  if (got != want && !a->bad->found) *a->bad = (sc_corrupt){1, g->step, g->chunk, from, (uint32_t)c->rank, g->line, got, want};
}

/* A checked one-source reduce in one pass (no repair, f32 sum: sc_reduce1_crc_ok): acc op sp into
 * dst, the source's CRC32C checked after use, the result's into *out_crc when asked. 0: not
 * applicable, nothing done. */
static int reduce_checked(schedc_comm *c, const sc_execargs *a, const sc_group *g, uint32_t gidx, int flip_first,
                          size_t k, const char *acc, const char *sp, char *dst, size_t len, uint32_t *out_crc) {
  if (!sc_reduce1_crc_ok(a->acc, a->op)) return 0; /* before the flip: the usual path would flip again */
  uint32_t from = a->prog->srcs[g->src_off].rank, got;
  sp = source_slice(c, g, gidx, 0, flip_first, sp, len * schedc_dtype_size(a->acc), a->coll);
  sc_reduce1_crc(a->acc, a->op, dst, acc, sp, len, &got, out_crc);
  checked_after(c, a, g, from, k, got);
  return 1;
}

schedc_status sc_exec(schedc_comm *c, const sc_execargs *a) {
  const sc_prog *p = a->prog;
  const sc_rankprog *rp = &p->rank[c->rank];
  sc_shared *sh = sc_cpu_of(c)->sh;
  size_t esz = schedc_dtype_size(a->acc), K = a->count;
  uint32_t C = p->nchunks;
  size_t maxchunk = (K + C - 1) / C, se, nsl;
  if (sc_exec_slicing(c, K, C, esz, &se, &nsl))
    return sc_err(SCHEDC_EUNAVAIL, "plan has %u chunks; this communicator holds counters for %u", C, sh->ctr_per_rank);
  /* check: verify sources against their CRC32C; flip: a flip injection may land in this call
   * (it applies with or without checking, to show what goes undetected without). */
  int check = (c->verify & SC_V_CHECKSUM) && !(a->flags & SC_CALL_NOVERIFY);
  int inject = !(a->flags & SC_CALL_NOINJECT);
  int flip = c->inj.flip_rank >= 0 && inject;
  if (flip && sc_cpu_of(c)->flip.prog != p) find_flip(c, p);
  flip = flip && sc_cpu_of(c)->flip.dst == c->rank;
  sc_cpu_of(c)->ctr_used[a->parity] = (size_t)C * nsl; /* what the next reset of this parity must clear */
  /* Temps for phase A groups: one chunk each. */
  size_t need = (size_t)rp->ntemp * maxchunk * esz;
  if (need > sc_cpu_of(c)->temp_cap) {
    void *t = realloc(sc_cpu_of(c)->temp, need);
    if (!t) return sc_err(SCHEDC_ENOMEM, "out of memory for %zu bytes of temporaries", need);
    sc_cpu_of(c)->temp = t;
    sc_cpu_of(c)->temp_cap = need;
  }
  /* A widened call's scratch: an own cell widened (cvt_in), a result before it is narrowed (cvt_out). */
  char *cvt_in = NULL, *cvt_out = NULL;
  if (a->wide) {
    if (2 * se * esz > sc_cpu_of(c)->cvt_cap) {
      void *t = realloc(sc_cpu_of(c)->cvt, 2 * se * esz);
      if (!t) return sc_err(SCHEDC_ENOMEM, "out of memory for %zu bytes of conversion scratch", 2 * se * esz);
      sc_cpu_of(c)->cvt = t;
      sc_cpu_of(c)->cvt_cap = 2 * se * esz;
    }
    cvt_in = sc_cpu_of(c)->cvt;
    cvt_out = cvt_in + se * esz;
    /* narrowed into the receive buffer only at a cell's last write: a later group of this rank may
     * read an earlier version again, which must still be in the working type */
    if (C > sc_cpu_of(c)->lastw_cap) {
      uint32_t *t = realloc(sc_cpu_of(c)->lastw, C * sizeof *t);
      if (!t) return sc_err(SCHEDC_ENOMEM, "out of memory for %u chunks' last writes", C);
      sc_cpu_of(c)->lastw = t;
      sc_cpu_of(c)->lastw_cap = C;
    }
    for (uint32_t gi = 0; gi < rp->ng; gi++)
      if (p->groups[rp->g_off + gi].phase != SC_PH_A) sc_cpu_of(c)->lastw[p->groups[rp->g_off + gi].chunk] = gi;
  }
  size_t dsz = a->wide ? schedc_dtype_size(a->wide->dtype) : esz; /* bytes per element of init and out */
  _Atomic uint32_t *myver = sc_ctr(sh, a->parity, SC_VER, (uint32_t)c->rank);
  _Atomic uint32_t *myreads = sc_ctr(sh, a->parity, SC_READS, (uint32_t)c->rank);
  _Atomic uint32_t *mycrc = sc_ctr(sh, a->parity, SC_CRC, (uint32_t)c->rank);
  char *W = sc_cpu_of(c)->peer[c->rank];
  const void *srcp[MAX_CHAIN];
  sc_waitctx w = {c, a->coll, -1, 0, 0, 0, 0, SC_AT_STEP}; /* deadline: set at a wait's first slow look */
  uint32_t last_step = UINT32_MAX;
  schedc_status st = SCHEDC_OK;
  for (uint32_t gi = 0; gi < rp->ng && st == SCHEDC_OK; gi++) {
    const sc_group *g = &p->groups[rp->g_off + gi];
    const sc_src *src = &p->srcs[g->src_off];
    if (g->step != last_step) {
      last_step = g->step;
      if (inject && (st = inject_step(c, g->step, a->coll)) != SCHEDC_OK) break;
    }
    /* Another rank failed: stop before touching peers' buffers, which may be going away. */
    if (sc_failure_now(c)) {
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
    char *tmp = (char *)sc_cpu_of(c)->temp + (size_t)g->temp * maxchunk * esz;
    /* a version of a cell inside the caller's result (a widened call's: its last, since a later
     * group of this rank may read an earlier version again, which must stay in the working type) */
    int in_result = a->out && g->phase != SC_PH_A && lo >= a->out_lo && hi <= a->out_hi;
    int result_now = in_result && (!a->wide || sc_cpu_of(c)->lastw[g->chunk] == gi);
    /* SC_NAR_*: this final version is read by its peers narrowed, in the receive buffer (PUB); this
     * copy takes its source so, from the source's receive buffer (READ) */
    int nar = a->nar && a->wide ? a->nar[gi] : 0;
    /* no peer reads it (or reads it narrowed): straight into the receive buffer (no copy out for it
     * later); widened: computed in the working type into cvt_out (a copy: straight from its
     * source), then narrowed, before it is published */
    int to_out = result_now && (!g->pub_read || (nar & SC_NAR_PUB)), narrow = to_out && a->wide;
    /* widened, peers read it in the working type: written to W for them, then narrowed from there
     * (still in cache) into the receive buffer, not in a pass over W after the plan */
    int also = result_now && g->pub_read && a->wide && !to_out;
    if (!narrow) nar &= ~SC_NAR_READ; /* (sc_narrow_plan never asks it: its copies are final versions) */
    char *cell = to_out && !narrow ? a->out + (lo - a->out_lo) * esz : W + lo * esz; /* where this group writes */
    /* it writes into the receive buffer: an unread version sent there, or W is the receive buffer */
    int in_out = to_out || (in_result && cell == a->out + (lo - a->out_lo) * esz);
    /* the CRC32C of each written slice is needed: peers check it, or the sliced digest folds it */
    int want_crc = (check && g->pub_read) || (in_out && a->dig);
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
      char *dst = g->phase == SC_PH_A ? tmp + (slo - lo) * esz : narrow ? cvt_out : cell + (slo - lo) * esz;
      char *final = narrow ? a->out + (slo - a->out_lo) * dsz : NULL; /* the narrowed result's place */
      /* the CRC32C of what this group wrote, when a copy took it in passing (has_crc) */
      uint32_t crc = 0;
      int has_crc = 0;
      if (nar & SC_NAR_READ) { /* the source's final version, narrowed by its owner: its bits */
        sc_copy(final, sc_cpu_of(c)->peer_out[src[0].rank] + (slo - a->out_lo) * dsz, len * dsz);
        final = NULL;
      } else if (g->phase == SC_PH_C && narrow) {
        sc_narrow(a->wide, final, tmp + (slo - lo) * esz, len, cvt_in), final = NULL;
      } else if (g->phase == SC_PH_C) {
        if (want_crc) /* hashed as written back: one pass */
          crc = sc_crc32c_copy(dst, tmp + (slo - lo) * esz, len * esz), has_crc = 1;
        else sc_copy(dst, tmp + (slo - lo) * esz, len * esz);
      } else if (g->copy && (check || (in_out && a->dig))) {
        /* one pass: the copy, its CRC32C (the check against the sender's under checksums; the
         * published CRC; a slice of the sliced digest when it lands in the receive buffer) */
        uint32_t from = src[0].rank;
        const char *again = sc_cpu_of(c)->peer[from] + slo * esz;
        const char *sp = source_slice(c, g, rp->g_off + gi, 0, flip && j == 0, again, len * esz, a->coll);
        if (check) checked_source(c, a, g, from, k, dst, sp, again, len * esz, &crc);
        else crc = sc_crc32c_copy(dst, sp, len * esz);
        has_crc = 1;
      } else if (check && !c->repair && !g->copy && g->nsrc == 1 &&
                 reduce_checked(c, a, g, rp->g_off + gi, flip && j == 0, k, own_cell(a, W, g->chunk, slo, esz, len, cvt_in),
                                sc_cpu_of(c)->peer[src[0].rank] + slo * esz, dst, len,
                                want_crc ? &crc : NULL)) {
        has_crc = want_crc; /* the reduce hashed the partial sum as it stored it */
      } else {
        const char *acc = g->copy ? NULL : own_cell(a, W, g->chunk, slo, esz, len, cvt_in); /* a copy drops it */
        for (uint32_t s0 = 0; s0 < g->nsrc; s0 += MAX_CHAIN) {
          int n = (int)(g->nsrc - s0 < MAX_CHAIN ? g->nsrc - s0 : MAX_CHAIN);
          for (int s = 0; s < n; s++) {
            uint32_t si = s0 + (uint32_t)s, from = src[si].rank;
            srcp[s] = source_slice(c, g, rp->g_off + gi, si, flip && j == 0, sc_cpu_of(c)->peer[from] + slo * esz,
                                   len * esz, a->coll);
            uint32_t got;
            if (check)
              srcp[s] = checked_source(c, a, g, from, k, NULL, srcp[s], sc_cpu_of(c)->peer[from] + slo * esz, len * esz, &got);
          }
          if (g->copy && narrow) sc_narrow(a->wide, final, srcp[0], len, cvt_in), final = NULL;
          else if (g->copy) sc_copy(dst, srcp[0], len * esz);
          else sc_reduce_chain(a->acc, a->op, dst, acc, srcp, n, len);
          acc = dst;
        }
      }
      if (!g->copy && g->phase != SC_PH_C) /* SCHEDC_INJECT arith: a fault in the reduce just computed */
        sc_inject_arith(&c->inj, dst, len * esz, a->coll, c->rank, g->step, has_crc ? &crc : NULL);
      if (final) sc_narrow(a->wide, final, cvt_out, len, cvt_out); /* a reduce's result, rounded out */
      if (g->phase != SC_PH_C)
        for (uint32_t s = 0; s < g->nsrc; s++) sc_bump(sc_ctr(sh, a->parity, SC_READS, src[s].rank) + k);
      /* the CRC of what was written (from cache), once for both: peers check it, the digest folds it */
      if (!has_crc && want_crc) crc = sc_crc32c(dst, len * esz), has_crc = 1;
      if (check && g->pub_read) /* before the version that peers wait for (dst is W's slice) */
        atomic_store_explicit(&mycrc[k], crc, memory_order_relaxed);
      if (in_out && a->dig) a->dig[k] = crc;
      if (g->phase != SC_PH_A) sc_publish(&myver[k], g->version);
      if (also) sc_narrow(a->wide, a->out + (slo - a->out_lo) * dsz, dst, len, cvt_out); /* W untouched */
      sc_beat(c, 0); /* running: a rank waiting on this one keeps spinning (no clock read) */
    }
    if (a->wide && a->wide->tally && !g->copy && a->loc[g->chunk] == SC_LOC_SEND) a->wide->tallied[g->chunk] = 1;
    if (a->loc && g->phase != SC_PH_A && st == SCHEDC_OK) a->loc[g->chunk] = in_out || also ? SC_LOC_OUT : SC_LOC_W;
  }
  /* A rank with no writes left (a broadcast root) still "reaches" the end of the plan. */
  if (st == SCHEDC_OK && inject && last_step != p->nsteps) st = inject_step(c, p->nsteps, a->coll);
  /* Drain: peers may still be reading this rank's cells; the caller's buffer must stay intact
   * until every read the plan makes of it is done (and the result may be changed in place next:
   * avg divides it, flipout injects into it). */
  for (uint32_t ch = 0; ch < C && st == SCHEDC_OK; ch++) {
    size_t lo, hi;
    sc_chunk_range(K, C, ch, &lo, &hi);
    w.step = p->nsteps;
    w.chunk = ch;
    w.line = 0;
    w.at = SC_AT_DRAIN;
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

