/*
 * mpi.c — the `mpi` transport (built when MPI is found): ranks may be on different hosts, so
 * transfers are messages. Per step this rank posts a receive for every transfer into it (into a
 * temp) and a send for every transfer out of it (from its cells, which hold the values before
 * the step), completes them all, then applies its writes in plan order, fused per cell — the
 * step semantics, literally. Every completion is polled against the communicator's deadline.
 * If MPI is not initialised, schedc initialises it and finalises it at exit, never earlier (a
 * later communicator may still need it; MPI cannot be initialised twice). MPI that the caller
 * initialised is the caller's to finalise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "backends.h"
#include "comm.h"
#include "crc.h"
#include "dl.h"
#include "err.h"
#include "hosts.h"
#include "kernels.h"
#include "params.h"
#include "plan.h"

typedef struct mpidata {
  MPI_Comm comm;
  int we_initialised;
  void *temp;
  size_t temp_cap;
  uint32_t *crc;             /* checksum mode: [2 * transfers of a step] sent and received CRCs */
  size_t crc_cap;
  void *flip;                /* flip injection: the corrupted copy that is sent */
  MPI_Request *reqs;
  size_t req_cap;
} mpidata;

static void m_free(schedc_comm *c) {
  mpidata *d = c->be_data;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
  free(d->temp);
  free(d->crc);
  free(d->flip);
  free(d->reqs);
  free(d);
  c->be_data = NULL;
}

/* MPI that schedc initialised itself is finalised when the process exits (unless the program
 * finalised it first), so any number of communicators may come and go before. */
static void finalize_at_exit(void) {
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin) MPI_Finalize();
}

int sc_mpi_built(void) { return 1; }

void sc_mpi_backend_probe(sc_probe *p) {
  p->built = p->found = 1;
  snprintf(p->why, sizeof p->why, "any MPI launcher (mpirun), or a singleton");
}

/* MPI_Get_library_version may be called before MPI_Init (MPI 3.0): nothing is initialised. */
void sc_mpi_probe(sc_probe *p) {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  p->built = 1;
  p->found = sc_dl_addr_path((const void *)(uintptr_t)MPI_Get_library_version, p->path, sizeof p->path);
  if (MPI_Get_library_version(v, &len) == MPI_SUCCESS && len > 0) {
    v[len < (int)sizeof v ? len : (int)sizeof v - 1] = 0;
    size_t n = strcspn(v, ",\n"); /* "Open MPI v4.1.4, package: ...": its first clause */
    snprintf(p->version, sizeof p->version, "%.*s", (int)n, v);
    p->found = 1;
  }
}

/* Wait for n requests with the deadline; names the step and the peers still pending. */
static schedc_status wait_all(schedc_comm *c, MPI_Request *r, int n, const int *peer, const char *coll,
                              uint32_t step, double deadline) {
  for (;;) {
    int done = 0;
    MPI_Testall(n, r, &done, MPI_STATUSES_IGNORE);
    if (done) return SCHEDC_OK;
    if (sc_now() > deadline) {
      int who = -1;
      for (int i = 0; i < n && who < 0; i++) {
        int f = 0;
        MPI_Test(&r[i], &f, MPI_STATUS_IGNORE);
        if (!f) who = peer[i];
      }
      c->broken = 1;
      return sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d in step %u: it waited for rank %d",
                    coll, c->timeout_s, c->rank, step, who);
    }
  }
}

/* Every rank must make the same call: the agreements gathered, the first field that differs named
 * (core/agree.h: the words of every backend). The communicator is broken afterwards. */
static schedc_status agree(schedc_comm *c, const sc_call *k) {
  mpidata *d = c->be_data;
  int n = c->nranks;
  sc_agreement mine, *all = malloc((size_t)n * sizeof *all);
  if (!all) return sc_err(SCHEDC_ENOMEM, "out of memory");
  sc_agreement_of(&mine, k, SC_PATH_PLAN);
  MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, d->comm);
  schedc_status st = SCHEDC_OK;
  for (int r = 0; r < n && st == SCHEDC_OK; r++) st = sc_agreement_check(k->cn, c->rank, &mine, r, &all[r]);
  free(all);
  if (st != SCHEDC_OK) c->broken = 1;
  return st;
}

/* One run (attempt: 0, then the reruns of a repair) of the plan over the private working buffer
 * W; the first corrupted transfer received into *bad. */
static schedc_status run(schedc_comm *c, const sc_call *call, char *W, int attempt, sc_corrupt *bad) {
  mpidata *d = c->be_data;
  const schedc_plan *plan = call->plan;
  const char *cn = call->cn;
  schedc_dtype acc = call->acc;
  schedc_op op = call->op;
  size_t K = call->K;
  int me = c->rank;
  const sc_ir *ir = &plan->ir;
  size_t asz = schedc_dtype_size(acc), maxchunk = (K + ir->nchunks - 1) / ir->nchunks;
  if (maxchunk * asz > (size_t)1 << 30)
    return sc_err(SCHEDC_EINVAL, "%s: chunks of %zu bytes exceed the MPI transport's 1 GiB per message; use a plan "
                  "with more chunks", cn, maxchunk * asz);
  double deadline = sc_now() + c->timeout_s;
  int check = sc_call_checks(call);
  int flip_step = c->inj.flip_rank == me && sc_call_injects(call) && attempt == 0 ? c->inj.flip_step : -1;
  for (uint32_t s = 0; s < ir->nsteps; s++) {
    uint32_t lo = ir->step_off[s], hi = ir->step_off[s + 1], nin = 0, nreq = 0;
    for (uint32_t i = lo; i < hi; i++) nin += ir->xfers[i].dst == (uint32_t)me;
    size_t need = (size_t)nin * maxchunk * asz;
    if (need > d->temp_cap) {
      void *t = realloc(d->temp, need);
      if (!t) return sc_err(SCHEDC_ENOMEM, "out of memory for %zu bytes of receive buffers", need);
      d->temp = t;
      d->temp_cap = need;
    }
    /* Requests: one per transfer, and one more per transfer for its CRC in checksum mode. */
    size_t nr = (size_t)(hi - lo) * (check ? 2 : 1);
    if (nr > d->req_cap) {
      MPI_Request *rq = realloc(d->reqs, nr * (sizeof *rq + sizeof(int)));
      if (!rq) return sc_err(SCHEDC_ENOMEM, "out of memory");
      d->reqs = rq;
      d->req_cap = nr;
    }
    if (check && 2 * (size_t)(hi - lo) > d->crc_cap) {
      uint32_t *cr = realloc(d->crc, 2 * (size_t)(hi - lo) * sizeof *cr);
      if (!cr) return sc_err(SCHEDC_ENOMEM, "out of memory");
      d->crc = cr;
      d->crc_cap = 2 * (size_t)(hi - lo);
    }
    int *peer = (int *)(d->reqs + d->req_cap);
    int tag = (int)(s % 16000) * 2; /* tag + 1: the CRC of the same transfer */
    uint32_t k = 0;
    for (uint32_t i = lo; i < hi; i++) {
      const sc_xfer *x = &ir->xfers[i];
      size_t clo, chi;
      sc_chunk_range(K, ir->nchunks, x->chunk, &clo, &chi);
      int cnt = (int)((chi - clo) * asz); /* below 1 GiB: checked above */
      uint32_t *crc = check ? &d->crc[2 * (i - lo)] : NULL;
      if (x->dst == (uint32_t)me) {
        MPI_Irecv((char *)d->temp + (size_t)k++ * maxchunk * asz, cnt, MPI_BYTE, (int)x->src, tag, d->comm, &d->reqs[nreq]);
        peer[nreq++] = (int)x->src;
        if (check) {
          MPI_Irecv(crc, 1, MPI_UINT32_T, (int)x->src, tag + 1, d->comm, &d->reqs[nreq]);
          peer[nreq++] = (int)x->src;
        }
      } else if (x->src == (uint32_t)me) {
        const char *payload = W + clo * asz;
        if (check) *crc = sc_crc32c(payload, (size_t)cnt);
        void *fb = (int)s == flip_step && cnt > 0 ? realloc(d->flip, (size_t)cnt) : NULL;
        if (fb) {
          d->flip = fb;
          /* the injected link fault: the payload is corrupted after its CRC was computed */
          memcpy(d->flip, payload, (size_t)cnt);
          sc_inject_flip(&c->inj, d->flip, (size_t)cnt, cn, (int)x->dst, s);
          payload = d->flip;
          flip_step = -1; /* one transfer per call */
        }
        MPI_Isend(payload, cnt, MPI_BYTE, (int)x->dst, tag, d->comm, &d->reqs[nreq]);
        peer[nreq++] = (int)x->dst;
        if (check) {
          MPI_Isend(crc, 1, MPI_UINT32_T, (int)x->dst, tag + 1, d->comm, &d->reqs[nreq]);
          peer[nreq++] = (int)x->dst;
        }
      }
    }
    schedc_status st = wait_all(c, d->reqs, (int)nreq, peer, cn, s, deadline);
    if (st != SCHEDC_OK) return st;
    /* Writes in plan order; consecutive reduces into one cell fold in one pass. */
    k = 0;
    for (uint32_t i = lo; i < hi; i++) {
      const sc_xfer *x = &ir->xfers[i];
      if (x->dst != (uint32_t)me) continue;
      size_t clo, chi;
      sc_chunk_range(K, ir->nchunks, x->chunk, &clo, &chi);
      char *in = (char *)d->temp + (size_t)k++ * maxchunk * asz;
      if (check) {
        uint32_t got = sc_crc32c(in, (chi - clo) * asz), want = d->crc[2 * (i - lo)];
        if (got != want) {
          sc_corrupt b = {1, s, x->chunk, x->src, (uint32_t)me, x->line, got, want};
          if (!bad->found) *bad = b;
          if (c->repair) sc_corrupt_warn(cn, &b, ir->nfiles ? ir->files[x->file] : "?", "the call runs again");
        }
      }
      if (x->kind == SCHEDC_XFER_COPY) memcpy(W + clo * asz, in, (chi - clo) * asz);
      else {
        const void *srcs[1] = {in};
        sc_reduce_chain(acc, op, W + clo * asz, W + clo * asz, srcs, 1, chi - clo);
        sc_inject_arith(&c->inj, W + clo * asz, (chi - clo) * asz, cn, me, s, NULL); /* SCHEDC_INJECT arith */
      }
    }
  }
  return SCHEDC_OK;
}

/* Is `flag` set on any rank? (MPI_Allreduce; leaves the working buffer alone.) */
static schedc_status any_rank(schedc_comm *c, int flag, int *any) {
  mpidata *d = c->be_data;
  if (MPI_Allreduce(&flag, any, 1, MPI_INT, MPI_LOR, d->comm) != MPI_SUCCESS)
    return sc_err(SCHEDC_EIO, "MPI_Allreduce failed while deciding whether to run the call again");
  return SCHEDC_OK;
}

/* The MPI backend's collective: the working buffer is private scratch; messages move the data. */
static schedc_status m_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  size_t asz = schedc_dtype_size(k->acc);
  char *W = sc_scratch(c, k->K * asz);
  if (!W && k->K) return SCHEDC_ENOMEM;
  schedc_status st = agree(c, k);
  if (st != SCHEDC_OK) return st;
  /* A corrupted message cannot be fetched again once the step is over (the sender's cell moves
   * on), so with checksum repair the whole call runs again from the inputs, which the MPI path
   * leaves intact until the result is copied out. */
  for (int attempt = 0;; attempt++) {
    memset(&res->bad, 0, sizeof res->bad);
    sc_work_in(c, k, W);
    if ((st = run(c, k, W, attempt, &res->bad)) != SCHEDC_OK) break;
    if (!sc_call_checks(k) || !sc_call_repairs(k) || attempt == 2) break;
    int rerun = 0;
    if ((st = any_rank(c, (int)res->bad.found, &rerun)) != SCHEDC_OK) break;
    if (!rerun) break;
  }
  if (st != SCHEDC_OK) {
    c->broken = 1;
    return st;
  }
  sc_work_out(c, k, W, res);
  return SCHEDC_OK;
}

/* schedc_mem_alloc: heap memory (messages copy anyway: no copy is saved, the calls just work). */
static const sc_backend mpi_backend = {"mpi", SC_CAP_HOST_RESULT | SC_CAP_EXACT | SC_CAP_WIRE, m_collective, NULL, m_free, sc_mem_host_alloc,
                                       sc_mem_host_free};

/* MPI_COMM_WORLD must be the job the launcher meant: processes started by another launcher
 * (`schedc launch`, torchrun) with SCHEDC_BACKEND=mpi are each a 1-rank MPI job, and would
 * otherwise each run alone and "succeed". Every rank sees the disagreement, so every rank fails. */
static schedc_status check_launcher(int rank, int size) {
  static const sc_param pairs[2][2] = {{SC_P_SCHEDC_NRANKS, SC_P_SCHEDC_RANK}, {SC_P_WORLD_SIZE, SC_P_RANK}};
  for (int i = 0; i < 2; i++) {
    const char *n = sc_param_raw(pairs[i][0]), *r = sc_param_raw(pairs[i][1]);
    long long want = 0, wr = 0;
    schedc_status st;
    if (!n) continue;
    if ((st = sc_param_parse_int(pairs[i][0], n, &want)) != SCHEDC_OK) return st;
    if (want != size)
      return sc_err(SCHEDC_EINVAL, "mpi: %s=%lld but MPI_COMM_WORLD has %d rank%s: the processes are not one MPI job "
                    "(started by another launcher? use mpirun -n %lld, or SCHEDC_BACKEND=shm)",
                    sc_params[pairs[i][0]].name, want, size, size == 1 ? "" : "s", want);
    if (r && (st = sc_param_parse_int(pairs[i][1], r, &wr)) == SCHEDC_OK && wr != rank)
      return sc_err(SCHEDC_EINVAL, "mpi: %s=%lld but this process is rank %d of MPI_COMM_WORLD: the launcher and MPI "
                    "disagree on the ranks", sc_params[pairs[i][1]].name, wr, rank);
    return SCHEDC_OK; /* the first pair set is the launcher's word, as in schedc_comm_init_env */
  }
  return SCHEDC_OK;
}

schedc_status schedc_comm_init_mpi(const void *mpi_comm, const schedc_comm_opts *opts, schedc_comm **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    if (mpi_comm) return sc_err(SCHEDC_EINVAL, "an MPI_Comm was given but MPI is not initialised");
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return sc_err(SCHEDC_EINVAL, "MPI was finalised already; it cannot be initialised again");
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return sc_err(SCHEDC_EIO, "MPI_Init failed");
    atexit(finalize_at_exit);
  }
  MPI_Comm base = mpi_comm ? *(const MPI_Comm *)mpi_comm : MPI_COMM_WORLD;
  int rank, size;
  MPI_Comm_rank(base, &rank);
  MPI_Comm_size(base, &size);
  schedc_status st;
  if (!mpi_comm && (st = check_launcher(rank, size)) != SCHEDC_OK) return st;
  schedc_comm *c;
  st = sc_comm_new(&mpi_backend, rank, size, opts, &c);
  if (st != SCHEDC_OK) return st;
  mpidata *d = calloc(1, sizeof *d);
  if (!d) { sc_comm_release(c); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  d->comm = MPI_COMM_NULL;
  c->be_data = d;
  if (MPI_Comm_dup(base, &d->comm) != MPI_SUCCESS) {
    schedc_comm_free(c);
    return sc_err(SCHEDC_EIO, "MPI_Comm_dup failed");
  }
  /* Plan hashes at init, like the shared-memory backends, and every rank's host: ranks on
   * several hosts get hierarchical default plans (hosts.c, dispatch.c). */
  uint64_t mine[3] = {c->init_plan ? c->init_plan->hash : 0, sc_host_id(), sc_comm_layout_word(c)}, h = mine[0];
  uint64_t *all = malloc((size_t)size * 3 * sizeof *all), *ids = malloc((size_t)size * sizeof *ids);
  if (!all || !ids) { free(all); free(ids); schedc_comm_free(c); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  MPI_Allgather(mine, 3, MPI_UINT64_T, all, 3, MPI_UINT64_T, d->comm);
  for (int r = 0; r < size; r++) {
    ids[r] = all[3 * r + 1];
    if (all[3 * r] != h || all[3 * r + 2] != mine[2]) {
      st = all[3 * r] != h ? sc_err(SCHEDC_EMISMATCH, "rank %d was initialised with plan %016llx but rank %d with plan %016llx",
                                    rank, (unsigned long long)h, r, (unsigned long long)all[3 * r])
                           : sc_layout_mismatch(c, r, all[3 * r + 2]);
      free(all);
      free(ids);
      schedc_comm_free(c);
      return st;
    }
  }
  free(all);
  st = sc_comm_set_hosts(c, ids);
  free(ids);
  if (st != SCHEDC_OK) { schedc_comm_free(c); return st; }
  *out = c;
  return SCHEDC_OK;
}
