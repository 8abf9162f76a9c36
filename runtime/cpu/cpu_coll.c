/*
 * cpu_coll.c — the collective of the CPU backends (threads, shm) and their operation tables.
 * A call: the working buffer (the caller's receive buffer when the transport can share it and
 * it holds the result in the accumulation type, else the transport's), this rank's cells in,
 * the arrival (the entry barrier folded into per-rank lines, with the call check: every rank's
 * descriptor must match), the executor over the mapped peers, then the result out; or, for a
 * small call, the arrival carrying the cells and each rank evaluating the proven order itself.
 * Both backends share this; their transports differ.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "err.h"
#include "kernels.h"
#include "params.h"
#include "plan.h"

/* Layout: the head and slots, the counters (64-byte aligned), the arrival lines. */
static size_t arr_data(uint32_t nranks) {
  size_t d = ((size_t)512 << 10) / (nranks ? nranks : 1) & ~(size_t)63;
  return d < SC_SMALL_CAP ? d : SC_SMALL_CAP;
}
static size_t arr_stride(uint32_t nranks) { return (sizeof(sc_arrival) + arr_data(nranks) + 63) & ~(size_t)63; }
static size_t ctr_off(uint32_t nranks) { return (sizeof(sc_shared) + (size_t)nranks * sizeof(sc_slot) + 63) & ~(size_t)63; }
static size_t arr_off(uint32_t nranks, uint32_t ctr_per_rank) {
  return ctr_off(nranks) + (((size_t)2 * SC_NKINDS * nranks * ctr_per_rank * sizeof(uint32_t) + 63) & ~(size_t)63);
}

size_t sc_shared_size(uint32_t nranks, uint32_t ctr_per_rank) {
  return arr_off(nranks, ctr_per_rank) + (size_t)2 * nranks * arr_stride(nranks);
}

void sc_shared_init(sc_shared *sh, uint32_t nranks, uint32_t ctr_per_rank) {
  memset(sh, 0, sc_shared_size(nranks, ctr_per_rank));
  sh->magic = SC_SHARED_MAGIC;
  sh->nranks = nranks;
  sh->ctr_per_rank = ctr_per_rank;
  sh->ctr_off = ctr_off(nranks);
  sh->arr_off = arr_off(nranks, ctr_per_rank);
  sh->arr_stride = (uint32_t)arr_stride(nranks);
  sh->arr_data = (uint32_t)arr_data(nranks);
  atomic_store(&sh->fail_seq, UINT64_MAX);
}

uint32_t sc_ctr_capacity(int nranks) {
  uint32_t cap = (1u << 22) / (uint32_t)nranks;
  if (cap > 65536) cap = 65536;
  if (cap < 1024) cap = 1024;
  return cap;
}

schedc_status sc_cpu_new(const sc_backend *be, const sc_transport *tr, int rank, int nranks,
                         const schedc_comm_opts *opts, const sc_inject *inj, schedc_comm **out) {
  schedc_comm *c;
  schedc_status st = sc_comm_new_inj(be, rank, nranks, opts, inj, &c);
  if (st != SCHEDC_OK) return st;
  sc_cpu *x = calloc(1, sizeof *x);
  if (!x || !(x->peer = calloc((size_t)nranks, sizeof *x->peer))) {
    free(x);
    sc_comm_release(c);
    return sc_err(SCHEDC_ENOMEM, "out of memory");
  }
  x->tr = tr;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  x->oversubscribed = nranks > (ncpu > 0 ? ncpu : 1);
  /* SCHEDC_SPIN's words: auto, short; SCHEDC_BIND's: none, core. SCHEDC_SMALL, default 8 KiB
   * (SC_SMALL_CAP): the small-message path beats the plan up to there at 2 and 4 ranks on the
   * 2-core VM (docs/performance.md); above 64 ranks the line caps it lower */
  int spin = 0, bind = 0;
  if ((st = sc_param_enum(SC_P_SCHEDC_SPIN, &spin)) != SCHEDC_OK || (st = sc_param_enum(SC_P_SCHEDC_BIND, &bind)) != SCHEDC_OK ||
      (st = sc_param_size(SC_P_SCHEDC_SMALL, &x->small)) != SCHEDC_OK) {
    free(x->peer);
    free(x);
    sc_comm_release(c);
    return st;
  }
  x->spin_short = spin == 1;
  x->bind_wanted = bind == 1;
  c->be_data = x;
  *out = c;
  return SCHEDC_OK;
}

schedc_status sc_cpu_start(schedc_comm *c) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  sc_slot *me = &sh->slots[c->rank];
  me->init_hash = c->init_plan ? c->init_plan->hash : 0;
  me->layout = sc_comm_layout_word(c);
  atomic_store(&me->state, SC_ALIVE);
  schedc_status st = sc_barrier(c, "communicator init", sc_now() + c->timeout_s);
  if (st != SCHEDC_OK) return st;
  for (int r = 0; r < c->nranks; r++) {
    if (sh->slots[r].init_hash != me->init_hash)
      return sc_err(SCHEDC_EMISMATCH, "rank %d was initialised with plan %016llx but rank %d with plan %016llx",
                    c->rank, (unsigned long long)me->init_hash, r, (unsigned long long)sh->slots[r].init_hash);
    if (sh->slots[r].layout != me->layout) return sc_layout_mismatch(c, r, sh->slots[r].layout);
  }
  return SCHEDC_OK;
}

/* After the arrival: reset the counters of the other parity for the next call (every peer has
 * finished the previous call, or it could not have entered this one). */
static void reset_counters(schedc_comm *c, int parity) {
  sc_cpu *x = sc_cpu_of(c);
  size_t nctr = x->ctr_used[parity ^ 1]; /* only what that parity's last call touched */
  if (!nctr) return;
  memset((void *)sc_ctr(x->sh, parity ^ 1, SC_VER, (uint32_t)c->rank), 0, nctr * sizeof(uint32_t));
  memset((void *)sc_ctr(x->sh, parity ^ 1, SC_READS, (uint32_t)c->rank), 0, nctr * sizeof(uint32_t));
  x->ctr_used[parity ^ 1] = 0;
}

/* Before the arrival: may this rank's final versions travel narrowed through its receive buffer
 * (sc_narrow_plan)? A widened allreduce with the shortcuts into the receive buffer (exact mode
 * too, but not under its identity check, which sums every rank's whole result as it narrows it:
 * that path stays the one it was proven on), nothing
 * injected into its transfers or reduces (a flip lands on a working-type payload), a plan of at
 * most SC_NAR_MAX_CELLS cells, and a receive buffer its peers can read. Recorded in the
 * descriptor, which the peers read after the arrival. */
static void share_out(schedc_comm *c, const sc_call *k, const sc_execargs *sp, sc_desc *d) {
  const sc_inject *in = &c->inj;
  int inj = sc_call_injects(k) && (in->flip_rank >= 0 || in->arith_rank >= 0);
  d->out_shared = 0;
  size_t cells = (size_t)k->prog->nranks * k->prog->nchunks; /* the plan's, as on every rank */
  if (k->coll == SCHEDC_ALLREDUCE && sp->wide && !(sp->wide->ex && sp->wide->tally) && sp->out && k->K && !inj &&
      cells <= SC_NAR_MAX_CELLS)
    d->out_shared = sc_cpu_of(c)->tr->share_out(c, k->recv, k->K * schedc_dtype_size(k->dtype), d);
}

/* After the arrival: when every rank's receive buffer is shared (the same answer on every rank,
 * from the same descriptors), the plan's narrowed finals (a->nar) and the peers' receive buffers
 * mapped; else nothing. */
static schedc_status narrow_finals(schedc_comm *c, const sc_call *k, sc_execargs *a) {
  sc_cpu *x = sc_cpu_of(c);
  int parity = (int)(k->seq & 1);
  if (!a->wide) return SCHEDC_OK;
  for (int r = 0; r < c->nranks; r++)
    if (!x->sh->slots[r].d[parity].out_shared) return SCHEDC_OK;
  /* out of memory, this rank cannot follow the plan its peers run: the call fails on every rank */
  const uint8_t *nar = NULL, *need = NULL;
  if ((!x->peer_out && !(x->peer_out = calloc((size_t)c->nranks, sizeof *x->peer_out))) ||
      !(nar = sc_narrow_plan(c, k->prog, k->plan->hash, k->K, &need))) {
    sc_fail(c, SC_ABORTED, "rank %d ran out of memory for the plan's narrowed versions", c->rank);
    return sc_err(SCHEDC_ENOMEM, "%s: out of memory for the plan's narrowed versions", k->cn);
  }
  schedc_status st = x->tr->map_outs(c, need, parity);
  if (st != SCHEDC_OK) {
    /* with the cause (a peer that died before it was mapped: the others name it through this) */
    sc_fail(c, SC_ABORTED, "rank %d could not map its peers' receive buffers: %s", c->rank, schedc_errmsg());
    return st;
  }
  a->nar = nar;
  return SCHEDC_OK;
}

/* The peers whose working buffers this rank reads in call k: those of its groups' sources whose
 * chunk holds elements. Not the plan's reads_from: a peer whose cells this rank reads are all empty
 * (K smaller than the chunks) waits for no read of its own and may have left the call and freed a
 * schedc_mem_alloc buffer before this rank maps it (direct.lua, 5 ranks, count 1, fresh buffers
 * each call: "could not map its peers' buffers"). The plan's answer when out of memory. */
static const uint8_t *reads_now(schedc_comm *c, const sc_call *k) {
  sc_cpu *x = sc_cpu_of(c);
  const sc_prog *p = k->prog;
  const sc_rankprog *rp = &p->rank[c->rank];
  if (!x->reads_now && !(x->reads_now = calloc((size_t)c->nranks, 1))) return rp->reads_from;
  memset(x->reads_now, 0, (size_t)c->nranks);
  for (uint32_t gi = rp->g_off; gi < rp->g_off + rp->ng; gi++) {
    const sc_group *g = &p->groups[gi];
    size_t lo, hi;
    sc_chunk_range(k->K, p->nchunks, g->chunk, &lo, &hi);
    if (hi > lo && g->phase != SC_PH_C)
      for (uint32_t s = 0; s < g->nsrc; s++) x->reads_now[p->srcs[g->src_off + s].rank] = 1;
  }
  return x->reads_now;
}

/* After the arrival: map the peers and run the plan (`sp`: the call's loc, init, out and wide). */
static schedc_status run_plan(schedc_comm *c, const sc_call *k, const sc_execargs *sp, sc_result *res) {
  sc_cpu *x = sc_cpu_of(c);
  int me = c->rank, parity = (int)(k->seq & 1);
  const sc_ir *ir = &k->plan->ir;
  schedc_status st;
  if (k->K == 0) return SCHEDC_OK; /* the call matched on every rank; there is nothing to move */
  if ((st = x->tr->map_peers(c, reads_now(c, k), parity)) != SCHEDC_OK) {
    sc_fail(c, SC_ABORTED, "rank %d could not map its peers' buffers: %s", me, schedc_errmsg());
    return st;
  }
  sc_execargs a = {k->prog, ir->nfiles ? ir->files[0] : "", k->cn, k->acc, k->op, k->K, parity, k->flags,
                   sp->loc, sp->init, sp->out, sp->out_lo, sp->out_hi, sp->dig, &res->bad, sp->wide, NULL};
  if ((st = narrow_finals(c, k, &a)) != SCHEDC_OK) return st;
  return sc_exec(c, &a);
}

/* The call's shortcuts around the working buffer W (sc_execargs: loc, init, out), when the caller's
 * buffers hold the working type: this rank's own cells that no peer reads at version 0 stay in
 * the send buffer (not copied in), and versions of result cells that no peer reads are written
 * straight into the receive buffer (not copied out). Under digest verification the executor
 * hashes what it writes there (sc_execargs.dig: the sliced digest), except for avg, whose
 * division comes after. Nothing changes for the peers: they read W only, the cells and versions
 * they read are there as before. 2 ranks, 64 MiB, ring: half the copy in and half the copy out
 * (docs/performance.md). */
static void plan_shortcuts(schedc_comm *c, const sc_call *k, char *W, int digest, sc_execargs *sp, sc_widening *wd) {
  sc_cpu *x = sc_cpu_of(c);
  int coll = k->coll, me = c->rank;
  uint32_t C = k->prog->nchunks;
  memset(sp, 0, sizeof *sp);
  if (!k->K || coll == SCHEDC_ALLGATHER || (coll == SCHEDC_BROADCAST && me != k->root))
    return; /* inputs in W's own block only (allgather), or none (broadcast) */
  if (k->acc != k->dtype) {
    /* Widened (f16/bf16 in f32, exact mode's integers): converted slice by slice by the executor
     * (sc_widening), for the reductions, without transfer checks or digests (they hash and compare
     * the working type's bits, taken by whole-buffer passes) and without exact leaves (several
     * inputs per element). Exact mode's identity check alone is taken in the conversions. */
    if (!sc_reduces(coll) || (k->checks & ~(uint32_t)SC_V_EXACT) || (k->ex.mode == SC_EXACT_CALL && k->ex.nleaves > 1))
      return;
    int tally = k->ex.mode == SC_EXACT_CALL && k->ex.tally;
    if (tally && x->tallied_cap < C) {
      uint8_t *t = realloc(x->tallied, C);
      if (!t) return; /* the whole-buffer conversions, which take the sums themselves */
      x->tallied = t;
      x->tallied_cap = C;
    }
    if (tally) memset(x->tallied, 0, C);
    *wd = (sc_widening){k->dtype, k->acc, k->ex.mode == SC_EXACT_CALL ? &k->ex : NULL,
                        k->op == SCHEDC_AVG && k->ex.mode != SC_EXACT_CALL ? c->nranks : 0, tally, 0, 0,
                        tally ? x->tallied : NULL};
  }
  if (x->loc_cap < C) {
    uint8_t *l = realloc(x->loc, C);
    if (!l) return; /* no shortcuts: the plain copies */
    x->loc = l;
    x->loc_cap = C;
  }
  memset(x->loc, SC_LOC_W, C);
  sp->loc = x->loc;
  sp->init = k->send != W ? k->send : NULL;
  if (k->acc != k->dtype) sp->wide = wd;
  size_t lo, len, esz = schedc_dtype_size(k->dtype); /* the caller's buffers' elements */
  sc_result_part(coll, me, k->root, k->count, k->K, &lo, &len);
  /* Writing into recv during the plan is safe only if it cannot land on a send cell still to be
   * read: recv apart from send, or each result element on its own input (in place). (reduce_scatter
   * with recv == send, which the API forbids, used to work: rank r's block lands on block 0.) */
  const char *s0 = k->send, *r0 = k->recv;
  int apart = r0 + len * esz <= s0 || s0 + k->K * esz <= r0, aligned = r0 == s0 + lo * esz;
  /* (W may be the receive buffer itself: then nothing changes but that the plan's writes there are
   * known to be in the receive buffer, SC_LOC_OUT, and hashed as written under digests) */
  if (!len || !(apart || aligned)) return;
  /* Under digest verification the executor hashes each slice it writes there (sc_execargs.dig),
   * which avg's division afterwards would make stale: avg copies out instead. */
  size_t se, nsl;
  if (digest) {
    int avg = k->op == SCHEDC_AVG && sc_reduces(coll);
    if (avg || sc_exec_slicing(c, k->K, C, schedc_dtype_size(k->acc), &se, &nsl)) return;
    if (x->dig_cap < (size_t)C * nsl) {
      uint32_t *d = realloc(x->dig, (size_t)C * nsl * sizeof *d);
      if (!d) return; /* the copy out takes every slice's CRC */
      x->dig = d;
      x->dig_cap = (size_t)C * nsl;
    }
    sp->dig = x->dig;
  }
  sp->out = k->recv;
  sp->out_lo = lo;
  sp->out_hi = lo + len;
}

/* Under digest verification: the result out as sc_work_out and result_out put it (avg divided
 * once in the accumulation type, rounded to the data type once, the flipout injection) and its
 * sliced digest (comm.h sc_dslice), slice by slice as each lands in the receive buffer: taken by
 * the copy where there is one (one pass, as sc_work_out's digest was), from the executor's CRC
 * where the plan wrote the slice there itself (SC_LOC_OUT), else by hashing it in place (the
 * working buffer is the receive buffer) or right after its rounding or division (from cache). */
static void digest_out(schedc_comm *c, const sc_call *k, char *W, const sc_execargs *sp, sc_result *res) {
  size_t asz = schedc_dtype_size(k->acc), dsz = schedc_dtype_size(k->dtype), lo, len, se = 1, nsl = 1;
  uint32_t C = k->prog->nchunks;
  sc_result_part(k->coll, c->rank, k->root, k->count, k->K, &lo, &len); /* the whole buffer: same_bits */
  sc_exec_slicing(c, k->K, C, asz, &se, &nsl); /* the plan ran, so its slicing exists */
  int avg = k->op == SCHEDC_AVG && sc_reduces(k->coll);
  long flip = sc_flipout_pos(c, k, len * dsz);
  char *out = k->recv;
  uint64_t h = sc_dslice_init(len);
  for (uint32_t ch = 0; ch < C; ch++) {
    size_t clo, chi;
    sc_chunk_range(k->K, C, ch, &clo, &chi);
    for (size_t j = 0; j < nsl && clo + j * se < chi; j++) {
      size_t slo = clo + j * se, shi = slo + se < chi ? slo + se : chi, n = shi - slo;
      char *dst = out + (slo - lo) * dsz;
      int where = sp->loc ? sp->loc[ch] : SC_LOC_W;
      uint32_t crc;
      if (where == SC_LOC_OUT) {
        crc = sp->dig[(size_t)ch * nsl + j];
      } else {
        char *from = where == SC_LOC_SEND ? (char *)sp->init + slo * asz : W + slo * asz;
        if (k->ex.mode == SC_EXACT_CALL) { /* exact: the integers rounded once (avg divided exactly first), and
                                            * summed for dispatch.c's identity (a wire's too: exact.h) */
          res->exact_out += sc_exact_out_summed(&k->ex, k->dtype, dst, (const int64_t *)(void *)from, n);
          crc = sc_crc32c(dst, n * dsz);
        } else if (k->acc != k->dtype) { /* W is the transport's, in the accumulation type */
          if (avg) sc_divide(k->acc, from, n, c->nranks);
          sc_from_acc(k->dtype, dst, from, n);
          crc = sc_crc32c(dst, n * dsz);
        } else if (avg) { /* copied, divided, then hashed once */
          if (dst != from) sc_copy(dst, from, n * dsz);
          sc_divide(k->acc, dst, n, c->nranks);
          crc = sc_crc32c(dst, n * dsz);
        } else {
          crc = sc_crc32c_copy(dst, from, n * dsz);
        }
      }
      if (flip >= 0 && (size_t)flip >= (slo - lo) * dsz && (size_t)flip < (shi - lo) * dsz) {
        sc_flipout(c, k, out, len * dsz); /* injected into this slice, before its hash */
        crc = sc_crc32c(dst, n * dsz);
      }
      h = sc_dslice_step(h, crc);
    }
  }
  res->digest = h;
  res->have_digest = 2;
  res->dsl = (sc_dslice){len, se, nsl, dsz, C};
}

/* Under the identity check, after the plan: the inputs of own cells that no group widened (still in
 * the send buffer: a rank alone, or a cell a copy overwrote) counted into the tally, through the
 * scratch, so that in_sum holds every input once. */
static void tally_rest(schedc_comm *c, const sc_call *k, const sc_execargs *sp) {
  sc_widening *wd = sp->wide;
  size_t asz = schedc_dtype_size(k->acc), dsz = schedc_dtype_size(k->dtype), se, nsl;
  uint32_t C = k->prog->nchunks;
  if (!wd || !wd->tally || !k->K || sc_exec_slicing(c, k->K, C, asz, &se, &nsl)) return;
  for (uint32_t ch = 0; ch < C; ch++) {
    size_t lo, hi;
    sc_chunk_range(k->K, C, ch, &lo, &hi);
    if (sp->loc[ch] != SC_LOC_SEND || wd->tallied[ch]) continue;
    for (size_t i = lo; i < hi; i += se)
      sc_widen(wd, sc_cpu_of(c)->cvt, sp->init + i * dsz, hi - i < se ? hi - i : se, 1);
    wd->tallied[ch] = 1;
  }
}

/* gather_result's part for a widened call, elements [clo, chi) of chunk ch: out NULL: the ones in
 * the send buffer widened into W (W then holds the whole result part, for sc_work_out); else
 * narrowed into out (avg divided first), the send buffer's through the scratch slice by slice. */
static void gather_wide(schedc_comm *c, const sc_call *k, char *W, const sc_execargs *sp, char *out, uint32_t ch,
                        size_t clo, size_t chi) {
  sc_widening *wd = sp->wide;
  size_t asz = schedc_dtype_size(k->acc), dsz = schedc_dtype_size(k->dtype), se, nsl;
  int send = sp->loc[ch] == SC_LOC_SEND;
  if (!out) {
    if (send) sc_widen(wd, W + clo * asz, sp->init + clo * dsz, chi - clo, 0); /* counted: tally_rest */
    return;
  }
  char *scratch = sc_cpu_of(c)->cvt; /* sc_exec made it: two slices, se elements each */
  sc_exec_slicing(c, k->K, k->prog->nchunks, asz, &se, &nsl); /* the plan ran, so its slicing exists */
  for (size_t i = clo; i < chi; i += se) {
    size_t n = chi - i < se ? chi - i : se;
    const char *from = W + i * asz;
    if (send) sc_widen(wd, scratch, sp->init + i * dsz, n, 0), from = scratch;
    sc_narrow(wd, out + (i - clo) * dsz, from, n, scratch);
  }
}

/* The rank's result part [lo, lo + len) of the working-buffer layout gathered into `to` (element
 * i at to + (i - to_lo) * esz): each chunk from wherever its final version is (W or the send
 * buffer; SC_LOC_OUT ones are in the receive buffer already). to = W, to_lo = 0: only the cells
 * still in the send buffer move (the W ones are in place). */
static void gather_result(schedc_comm *c, const sc_call *k, char *W, const sc_execargs *sp, char *to, size_t to_lo) {
  size_t esz = schedc_dtype_size(k->acc), lo, len;
  uint32_t C = k->prog->nchunks;
  sc_result_part(k->coll, c->rank, k->root, k->count, k->K, &lo, &len);
  for (uint32_t ch = 0; ch < C && len; ch++) {
    size_t clo, chi;
    sc_chunk_range(k->K, C, ch, &clo, &chi);
    if (clo < lo) clo = lo;
    if (chi > lo + len) chi = lo + len;
    if (chi <= clo || sp->loc[ch] == SC_LOC_OUT) continue;
    if (sp->wide) {
      gather_wide(c, k, W, sp, to == W ? NULL : to + (clo - to_lo) * schedc_dtype_size(k->dtype), ch, clo, chi);
      continue;
    }
    const char *from = sp->loc[ch] == SC_LOC_SEND ? sp->init + clo * esz : W + clo * esz;
    char *dst = to + (clo - to_lo) * esz;
    size_t bytes = (chi - clo) * esz;
    if (dst + bytes <= from || from + bytes <= dst) sc_copy(dst, from, bytes);
    else if (dst != from) memmove(dst, from, bytes);
  }
}

/* The result out with shortcuts: gathered into the receive buffer, then avg's one division and
 * the flipout injection, as sc_work_out does them (a widened call: narrowed as gathered, avg
 * divided before). */
static void result_out(schedc_comm *c, const sc_call *k, char *W, const sc_execargs *sp) {
  size_t lo, len;
  sc_result_part(k->coll, c->rank, k->root, k->count, k->K, &lo, &len);
  /* as sc_work_out: no digest is taken by this copy (none is asked: digest_out) */
  gather_result(c, k, W, sp, k->recv, lo);
  if (k->op == SCHEDC_AVG && sc_reduces(k->coll) && len && !sp->wide) sc_divide(k->acc, k->recv, len, c->nranks);
  if (sc_same_bits(k->coll)) sc_flipout(c, k, k->recv, len * schedc_dtype_size(k->dtype));
}

static schedc_status cpu_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  sc_cpu *x = sc_cpu_of(c);
  int me = c->rank, coll = k->coll;
  size_t asz = schedc_dtype_size(k->acc);
  uint64_t seq = k->seq;
  int parity = (int)(seq & 1);
  sc_slot *slot = &x->sh->slots[me];
  sc_desc *desc = &slot->d[parity];
  schedc_status st;
  if (x->bind_wanted) sc_bind_rank(c); /* the rank's own thread: the first call's */
  if (sc_small_call(c, k)) {
    /* the initial cells go into this rank's arrival line, where the peers read them */
    sc_work_in(c, k, sc_arr(x->sh, parity, (uint32_t)me)->data);
    sc_describe(desc, k, SC_PATH_SMALL);
    atomic_store_explicit(&slot->entered, (uint32_t)seq, memory_order_relaxed); /* for messages only */
    atomic_store_explicit(&slot->busy, 1u, memory_order_relaxed);
    st = sc_arrive(c, k, desc);
    if (st == SCHEDC_OK) {
      reset_counters(c, parity);
      st = sc_small_run(c, k, res);
    }
    /* peers read only arrival lines, never the caller's buffers: nothing to quiesce on failure */
    atomic_store_explicit(&slot->busy, 0u, memory_order_release);
    return st;
  }
  x->call_slice = k->slice;
  /* Working buffer: the caller's receive buffer when it holds the whole result in the
   * accumulation type and the transport can share it; else a buffer of the transport's. */
  int direct = k->acc == k->dtype && (coll == SCHEDC_ALLREDUCE || coll == SCHEDC_ALLGATHER ||
                                      coll == SCHEDC_BROADCAST || (coll == SCHEDC_REDUCE && me == k->root));
  char *W = x->tr->work(c, k->K * asz, direct ? k->recv : NULL, desc);
  if (!W && k->K) return SCHEDC_ENOMEM;
  int checks = sc_call_checks(k) && k->K;
  sc_execargs sp;
  sc_widening wd = {0};
  plan_shortcuts(c, k, W, sc_call_digests(k), &sp, &wd);
  if (sp.loc) {
    /* sc_work_in's copy (widened, for a widened call) of only the cells peers read first, hashed
     * as they are copied under checksums; the others stay in the send buffer */
    sc_exec_stage_inputs(c, k->prog, asz, k->K, W, sp.init, checks, sp.loc, parity, sp.wide);
  } else {
    sc_work_in(c, k, W);
    if (checks) sc_exec_stage_inputs(c, k->prog, asz, k->K, W, NULL, 1, NULL, parity, NULL);
  }
  share_out(c, k, &sp, desc);
  sc_describe(desc, k, SC_PATH_PLAN);
  atomic_store_explicit(&slot->entered, (uint32_t)seq, memory_order_relaxed); /* for messages only */
  atomic_store(&slot->busy, 1u);
  st = sc_arrive(c, k, desc); /* the timeout runs from when it first waits */
  if (st == SCHEDC_OK) {
    reset_counters(c, parity);
    st = run_plan(c, k, &sp, res);
  }
  atomic_store(&slot->busy, 0u);
  if (st != SCHEDC_OK) {
    if (sc_call_fail_dies(k)) st = sc_exec_die_failed(c, k->cn, st);
    sc_quiesce(c);
    return st;
  }
  if (sc_call_digests(k)) {
    digest_out(c, k, W, &sp, res);
    return SCHEDC_OK;
  }
  if (sp.wide && wd.tally) { /* the identity check's inputs' sum, taken as they were widened */
    tally_rest(c, k, &sp);
    k->ex.tally->in = wd.in_sum;
    k->ex.tally->done = 1;
  }
  if (sp.loc && sp.out) {
    result_out(c, k, W, &sp);
    if (sp.wide && wd.tally) res->exact_out = wd.out_sum; /* every result element was narrowed once */
    return SCHEDC_OK;
  }
  if (sp.loc) gather_result(c, k, W, &sp, W, 0); /* sc_work_out reads the result part of W whole */
  sc_work_out(c, k, W, res);
  return SCHEDC_OK;
}

static const char *cpu_failure(schedc_comm *c) {
  sc_shared *sh = sc_cpu_of(c)->sh;
  return sh && atomic_load(&sh->failed) == 2 ? sh->fail_msg : NULL;
}

static void cpu_free(schedc_comm *c) {
  sc_cpu *x = sc_cpu_of(c);
  sc_unbind_rank(c);
  x->tr->destroy(c);
  free(x->temp);
  free(x->flipbuf);
  free(x->loc);
  free(x->dig);
  free(x->cvt);
  free(x->lastw);
  free(x->tallied);
  free(x->peer);
  free(x->peer_out);
  free(x->nar);
  free(x->reads_now);
  free(x);
  c->be_data = NULL;
}

/* schedc_mem_alloc: heap memory for threads (every rank's thread reads it already, and t_work
 * shares the receive buffer wherever it lies); a memfd region per allocation for shm. */
const sc_backend sc_threads_backend = {"threads", SC_CAP_HOST_RESULT | SC_CAP_INJECT_STEPS | SC_CAP_EXACT | SC_CAP_WIRE, cpu_collective,
                                       cpu_failure, cpu_free, sc_mem_host_alloc, sc_mem_host_free, sc_cpu_shrink};
const sc_backend sc_shm_backend = {"shm", SC_CAP_HOST_RESULT | SC_CAP_INJECT_STEPS | SC_CAP_EXACT | SC_CAP_WIRE, cpu_collective, cpu_failure,
                                   cpu_free, sc_shm_mem_alloc, sc_shm_mem_free, sc_cpu_shrink};
