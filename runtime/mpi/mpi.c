/*
 * mpi.c — the `mpi` transport (built when MPI is found): ranks may be on different hosts, so
 * transfers are messages, run by the message executor (core/msgrun.c) over MPI point-to-point:
 * its port posts MPI_Irecv/MPI_Isend per transfer and completes a step's requests polled against
 * the communicator's deadline. If MPI is not initialised, schedc initialises it and finalises it
 * at exit, never earlier (a later communicator may still need it; MPI cannot be initialised
 * twice). MPI that the caller initialised is the caller's to finalise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends.h"
#include "comm.h"
#include "dl.h"
#include "err.h"
#include "hosts.h"
#include "msgrun.h"
#include "params.h"
#include "plan.h"

typedef struct mpidata {
  MPI_Comm comm;
  sc_msgbufs bufs;           /* the message executor's scratch */
  MPI_Request *reqs;         /* the step's posted operations, and their peers (after req_cap) */
  int *peer;
  size_t nreq, req_cap;
} mpidata;

static void m_free(schedc_comm *c) {
  mpidata *d = c->be_data;
  int fin = 0;
  MPI_Finalized(&fin);
  if (!fin && d->comm != MPI_COMM_NULL) MPI_Comm_free(&d->comm);
  sc_msgbufs_free(&d->bufs);
  free(d->reqs);
  free(d->peer);
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

/* ---- the message executor's port (core/msgrun.h) ---- */

/* A slot for one more request; NULL + errmsg when out of memory. */
static MPI_Request *next_req(mpidata *d, int peer) {
  if (d->nreq == d->req_cap) {
    size_t cap = d->req_cap ? 2 * d->req_cap : 64;
    MPI_Request *rq = realloc(d->reqs, cap * sizeof *rq);
    if (rq) d->reqs = rq;
    int *pr = rq ? realloc(d->peer, cap * sizeof *pr) : NULL;
    if (!pr) { sc_err(SCHEDC_ENOMEM, "out of memory"); return NULL; }
    d->peer = pr;
    d->req_cap = cap;
  }
  d->peer[d->nreq] = peer;
  return &d->reqs[d->nreq++];
}

/* Tags: the step (mod 16000) and what the message carries. */
static int tag_of(uint32_t step, int kind) { return (int)(step % 16000) * 2 + kind; }

static schedc_status m_recv(schedc_comm *c, int src, uint32_t step, int kind, void *buf, size_t bytes) {
  mpidata *d = c->be_data;
  MPI_Request *r = next_req(d, src);
  if (!r) return SCHEDC_ENOMEM;
  MPI_Irecv(buf, (int)bytes, MPI_BYTE, src, tag_of(step, kind), d->comm, r); /* bytes <= max_msg */
  return SCHEDC_OK;
}

static schedc_status m_send(schedc_comm *c, int dst, uint32_t step, int kind, const void *buf, size_t bytes) {
  mpidata *d = c->be_data;
  MPI_Request *r = next_req(d, dst);
  if (!r) return SCHEDC_ENOMEM;
  MPI_Isend(buf, (int)bytes, MPI_BYTE, dst, tag_of(step, kind), d->comm, r);
  return SCHEDC_OK;
}

/* Wait for the step's requests with the deadline; names the step and the first peer pending.
 * MPI moves data only inside its calls, so the wait polls: back to back at first, then with a
 * 50 us sleep between polls. A rank that only polled kept the CPU from the very peer it waited
 * for when ranks outnumber cores (4 ranks on 2 cores beside other work, docs/performance.md); a
 * wait longer than the spin costs at most one sleep more. */
enum { SPIN_POLLS = 256, POLL_SLEEP_NS = 50000 };
static schedc_status m_complete(schedc_comm *c, const char *coll, uint32_t step, double deadline) {
  mpidata *d = c->be_data;
  int n = (int)d->nreq;
  d->nreq = 0;
  for (int polls = 0;; polls++) {
    int done = 0;
    MPI_Testall(n, d->reqs, &done, MPI_STATUSES_IGNORE);
    if (done) return SCHEDC_OK;
    if (polls >= SPIN_POLLS) nanosleep(&(struct timespec){0, POLL_SLEEP_NS}, NULL);
    if (sc_now() > deadline) {
      int who = -1;
      for (int i = 0; i < n && who < 0; i++) {
        int f = 0;
        MPI_Test(&d->reqs[i], &f, MPI_STATUS_IGNORE);
        if (!f) who = d->peer[i];
      }
      c->broken = 1;
      return sc_err(SCHEDC_ETIMEOUT, "%s timed out after %.3g s on rank %d in step %u: it waited for rank %d",
                    coll, c->timeout_s, c->rank, step, who);
    }
  }
}

static schedc_status m_allgather(schedc_comm *c, const char *what, const void *mine, void *all, size_t bytes) {
  mpidata *d = c->be_data;
  if (MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, d->comm) != MPI_SUCCESS)
    return sc_err(SCHEDC_EIO, "%s: MPI_Allgather failed", what);
  return SCHEDC_OK;
}

/* MPI counts are ints: a message carries at most 1 GiB. */
static const sc_msgport mpi_port = {"the MPI transport", (size_t)1 << 30, m_recv, m_send, m_complete, m_allgather};

/* The MPI backend's collective: the message executor over MPI point-to-point messages. */
static schedc_status m_collective(schedc_comm *c, const sc_call *k, sc_result *res) {
  return sc_msg_collective(c, k, res, &mpi_port, &((mpidata *)c->be_data)->bufs);
}

/* schedc_comm_shrink: MPI's fault tolerance (ULFM: MPIX_Comm_shrink, MPIX_Comm_agree) is not in
 * Open MPI 4.1, and without it a dead process ends the MPI job. */
static schedc_status m_shrink(schedc_comm *c, const schedc_comm_opts *opts, schedc_comm **out) {
  (void)opts, (void)out;
  return sc_err(SCHEDC_EUNAVAIL, "schedc_comm_shrink: the mpi backend cannot shrink a communicator: this MPI (Open "
                "MPI 4.1) has no ULFM (MPIX_Comm_shrink), and a dead process ends the whole MPI job; rank %d: restart "
                "the job from a checkpoint (docs/recovery.md), or use the shm backend on one host", c->rank);
}

/* schedc_mem_alloc: heap memory (messages copy anyway: no copy is saved, the calls just work). */
static const sc_backend mpi_backend = {"mpi", SC_CAP_HOST_RESULT | SC_CAP_EXACT | SC_CAP_HOSTS | SC_CAP_WIRE, m_collective, NULL, m_free, sc_mem_host_alloc,
                                       sc_mem_host_free, m_shrink};

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
