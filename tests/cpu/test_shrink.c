/*
 * test_shrink.c — schedc_comm_shrink on threads and shm: ranks die (SCHEDC_INJECT kill inside a
 * collective at a plan step, one or two at once; a rank gone before a step), the survivors shrink,
 * agree on where to go on, and redo the step with the 12 exact leaves spread over however many
 * are left (12 on 5 is 3, 3, 2, 2, 2): every survivor must end every step with the bits of
 * exact_ref.h's evaluation of the 12 leaves (the run that never failed), and every survivor must
 * hold the same member list (the agreement cannot split). Also: a rank that joins too late is left
 * out and told so; the killed rank cannot join; shrink twice, NULL arguments; unequal leaf blocks.
 *   test_shrink [threads|shm] [full]    the sampled sweep (CI), or every rank count 2-8 x every
 *                                       lost rank x every plan step, and pairs (by hand)
 *   test_shrink mpi                     an mpi communicator (a singleton MPI job) refuses to shrink,
 *                                       saying why (Open MPI 4.1 has no ULFM)
 *   test_shrink bench [N] [REPS]        times on shm: kill -> every survivor's error, -> shrunk,
 *                                       -> the first step after the shrink (docs/performance.md)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check.h"
#include "../exact_ref.h"
#include "../shrink_steps.h"
#include "schedc/schedc.h"

enum { MAXR = 8 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* One rank's part and what it saw; lives in memory the test reads after the rank ended (shared
 * with the parent for shm). */
typedef struct rk {
  int rank, n;
  int leave_before;          /* gone before this training step: SIGKILL (shm) or freed (threads); -1 */
  schedc_comm *c;
  int done, nshrink;         /* finished every step; shrinks made */
  int members[MAXR], nmembers; /* the final communicator's members, as old ranks */
  float out[STEPS][COUNT];
  schedc_status st;          /* the first failure it could not go on from (0: none) */
  schedc_status shrink_st;
  char err[400];
  double t_err, t_shrunk, t_step; /* bench: when its call failed, its shrink returned, its redo ended */
} rk;

static void run_rank(rk *k, int processes) {
  schedc_comm *c = k->c;
  int cur = 0;
  while (cur < STEPS) {
    if (k->leave_before == cur && !k->nshrink) {
      if (processes) raise(SIGKILL);
      schedc_comm_free(c); /* a thread rank that is gone: its communicator freed */
      k->c = NULL;
      return;
    }
    schedc_status st = step_call(c, cur, k->out[cur]);
    if (st == SCHEDC_OK) { cur++; continue; }
    if (!k->t_err) k->t_err = now_s();
    if ((st != SCHEDC_EPEER && st != SCHEDC_ETIMEOUT) || k->nshrink >= 2) {
      k->st = st;
      snprintf(k->err, sizeof k->err, "step %d: %s", cur, schedc_errmsg());
      break;
    }
    schedc_comm *nc = NULL;
    k->shrink_st = schedc_comm_shrink(c, NULL, &nc);
    if (k->shrink_st != SCHEDC_OK) {
      k->st = st;
      snprintf(k->err, sizeof k->err, "shrink: %s", schedc_errmsg());
      break;
    }
    if (!k->t_shrunk) k->t_shrunk = now_s();
    schedc_comm_free(c);
    k->c = c = nc;
    k->nshrink++;
    /* where to go on: a rank may have finished a step another failed in, so the survivors go on
     * from the earliest step any of them has not finished */
    int64_t mine = cur, lo = -1;
    if ((st = schedc_allreduce(&mine, &lo, 1, SCHEDC_I64, SCHEDC_MIN, c, NULL)) != SCHEDC_OK) {
      k->st = st;
      snprintf(k->err, sizeof k->err, "agreeing on the step: %s", schedc_errmsg());
      break;
    }
    cur = (int)lo;
    if (cur < STEPS && step_call(c, cur, k->out[cur]) == SCHEDC_OK) { /* the redo, timed */
      k->t_step = now_s();
      cur++;
    }
  }
  if (cur == STEPS) {
    k->done = 1;
    k->nmembers = schedc_comm_nranks(c);
    for (int i = 0; i < k->nmembers && i < MAXR; i++) k->members[i] = schedc_comm_parent_rank(c, i);
    /* the members again, over the new communicator: a split group would gather another list */
    int mine = k->rank, all[MAXR];
    if (schedc_allgather(&mine, all, 1, SCHEDC_I32, c, NULL) != SCHEDC_OK ||
        memcmp(all, k->members, (size_t)k->nmembers * sizeof(int)))
      k->nmembers = -1;
  }
  schedc_comm_free(c);
  k->c = NULL;
}

static void *thread_main(void *p) {
  run_rank(p, 0);
  return NULL;
}

/* One case: n ranks; `killed` (a set of ranks) die by SCHEDC_INJECT kill at plan step `step`, or
 * leave before training step 1 when step < 0. Checks every survivor. Returns 1 if it failed. */
static int one_case(const char *backend, int n, unsigned killed, int step, rk *ranks) {
  char inj[128] = "";
  size_t len = 0;
  for (int r = 0; r < n && step >= 0; r++)
    if (killed >> r & 1) len += (size_t)snprintf(inj + len, sizeof inj - len, "%skill:%d:%d", len ? "," : "", r, step);
  if (inj[0]) setenv("SCHEDC_INJECT", inj, 1);
  else unsetenv("SCHEDC_INJECT");
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 30;
  memset(ranks, 0, (size_t)n * sizeof *ranks);
  for (int r = 0; r < n; r++) ranks[r] = (rk){.rank = r, .n = n, .leave_before = step < 0 && (killed >> r & 1) ? 1 : -1};
  if (!strcmp(backend, "threads")) {
    schedc_comm *comms[MAXR];
    if (schedc_comm_init_threads(n, &co, comms) != SCHEDC_OK) {
      fprintf(stderr, "init: %s\n", schedc_errmsg());
      return 1;
    }
    pthread_t t[MAXR];
    for (int r = 0; r < n; r++) {
      ranks[r].c = comms[r];
      pthread_create(&t[r], NULL, thread_main, &ranks[r]);
    }
    for (int r = 0; r < n; r++) pthread_join(t[r], NULL);
  } else {
    char job[64];
    static int seq;
    snprintf(job, sizeof job, "shrinktest-%d-%d", (int)getpid(), ++seq);
    pid_t pid[MAXR] = {0};
    for (int r = 0; r < n; r++) {
      if ((pid[r] = fork()) == 0) {
        if (schedc_comm_init_shm(r, n, job, &co, &ranks[r].c) != SCHEDC_OK) {
          snprintf(ranks[r].err, sizeof ranks[r].err, "init: %s", schedc_errmsg());
          ranks[r].st = SCHEDC_EINTERNAL;
          _exit(1);
        }
        run_rank(&ranks[r], 1);
        _exit(0);
      }
    }
    for (int r = 0; r < n; r++) waitpid(pid[r], NULL, 0);
  }
  unsetenv("SCHEDC_INJECT");
  int want[MAXR], k = 0, bad = 0;
  for (int r = 0; r < n; r++)
    if (!(killed >> r & 1)) want[k++] = r;
  for (int r = 0; r < n; r++) {
    rk *x = &ranks[r];
    if (killed >> r & 1) {
      /* a killed thread rank is refused by shrink, naming itself; a process is simply dead */
      if (!strcmp(backend, "threads") && step >= 0 &&
          (x->shrink_st != SCHEDC_EPEER || !strstr(x->err, "is the rank that died"))) {
        bad++;
        fprintf(stderr, "  killed rank %d: shrink %d, %s\n", r, x->shrink_st, x->err);
      }
      continue;
    }
    int ok = x->done && x->nmembers == k && !memcmp(x->members, want, (size_t)k * sizeof(int)) && x->nshrink == 1;
    for (int s = 0; s < STEPS && ok; s++) ok = !memcmp(x->out[s], g_want[s], sizeof g_want[s]);
    if (!ok) {
      bad++;
      fprintf(stderr, "  survivor %d: done %d, shrinks %d, members %d (want %d), err '%s'\n", r, x->done, x->nshrink,
              x->nmembers, k, x->err);
    }
  }
  if (bad) fprintf(stderr, "FAIL %s n=%d killed=%#x step=%d (%s)\n", backend, n, killed, step, inj);
  return bad != 0;
}

/* Ring plan steps of the default allreduce plan at n ranks: 2(n-1). */
static int nsteps(int n) { return n > 1 ? 2 * (n - 1) : 0; }

static void sweep(const char *backend, int full, rk *ranks) {
  int cases = 0, failed = 0;
  double t0 = now_s();
  for (int n = 2; n <= MAXR; n++) {
    /* sampled: each rank count loses one rank inside a collective at one plan step, and another
     * rank before a training step and once its part of the plan is done (its peers may finish the
     * call and fail the next: they go back to the earliest unfinished step), the ranks and steps
     * rotating with n; full: every rank at every plan step, after its part, and before a step */
    int lost_a = (5 * n + 3) % n, step_a = (5 * n) % nsteps(n), lost_b = (lost_a + 1) % n;
    for (int lost = 0; lost < n; lost++)
      for (int s = -1; s <= nsteps(n); s++) { /* nsteps: after its part of the plan, before the end */
        if (!full && !(lost == lost_a && s == step_a) && !(lost == lost_b && (s == -1 || s == nsteps(n)))) continue;
        failed += one_case(backend, n, 1u << lost, s, ranks);
        cases++;
      }
    /* two ranks at once: sampled, one pair per rank count (first and last, or two in the middle);
     * full: every pair at step 0 and at the last step */
    for (int a = 0; a < n; a++)
      for (int b = a + 1; b < n; b++) {
        if (n - 2 < 1) continue;
        int sample = (n % 2 ? a == 0 && b == n - 1 : a == 1 && b == n / 2 + (n / 2 == 1));
        if (!full && !sample) continue;
        for (int s = 0; s < nsteps(n); s += full ? nsteps(n) - 1 : nsteps(n)) {
          failed += one_case(backend, n, 1u << a | 1u << b, s, ranks);
          cases++;
          if (nsteps(n) == 1) break;
        }
      }
  }
  printf("%s: shrink after deaths, 2-%d ranks, %s: %d cases, %d failed (%.1f s)\n", backend, MAXR,
         full ? "every rank and plan step, pairs" : "sampled", cases, failed, now_s() - t0);
  CHECK(failed == 0 && cases > 0);
}

/* A live rank that does not join in time is left out, and told so when it does call; the others
 * go on without it. threads, 3 ranks, rank 2 killed, rank 1 late past the 0.5 s timeout. */
typedef struct late { schedc_comm *c; int delay_ms; schedc_status st, shrink_st; int nranks; char err[400]; } late;
static void *late_main(void *p) {
  late *l = p;
  float x[4] = {1, 2, 3, 4}, y[4];
  l->st = schedc_allreduce(x, y, 4, SCHEDC_F32, SCHEDC_SUM, l->c, NULL);
  if (l->delay_ms) usleep((useconds_t)l->delay_ms * 1000);
  schedc_comm *nc = NULL;
  l->shrink_st = schedc_comm_shrink(l->c, NULL, &nc);
  snprintf(l->err, sizeof l->err, "%s", l->shrink_st ? schedc_errmsg() : "");
  l->nranks = nc ? schedc_comm_nranks(nc) : 0;
  if (nc) {
    l->st = schedc_allreduce(x, y, 4, SCHEDC_F32, SCHEDC_SUM, nc, NULL); /* alone: itself */
    if (l->st == SCHEDC_OK && y[3] != 4) l->st = SCHEDC_EINTERNAL;
  }
  schedc_comm_free(nc);
  return NULL;
}
static void left_out(void) {
  setenv("SCHEDC_INJECT", "kill:2:0", 1);
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = 0.5;
  schedc_comm *c[3];
  CHECK(schedc_comm_init_threads(3, &co, c) == SCHEDC_OK);
  unsetenv("SCHEDC_INJECT");
  late l[3] = {{c[0], 0, 0, 0, 0, ""}, {c[1], 1500, 0, 0, 0, ""}, {c[2], 0, 0, 0, 0, ""}};
  pthread_t t[3];
  for (int r = 0; r < 3; r++) pthread_create(&t[r], NULL, late_main, &l[r]);
  for (int r = 0; r < 3; r++) pthread_join(t[r], NULL);
  CHECK(l[0].shrink_st == SCHEDC_OK && l[0].nranks == 1 && l[0].st == SCHEDC_OK);
  CHECK(l[1].shrink_st == SCHEDC_EPEER);
  CHECK_CONTAINS(l[1].err, "rank 1 was left out");
  CHECK(l[2].shrink_st == SCHEDC_EPEER);
  CHECK_CONTAINS(l[2].err, "rank 2 is the rank that died");
  /* shrink twice is refused; NULL arguments; a healthy communicator shrinks to itself */
  CHECK(schedc_comm_shrink(c[0], NULL, NULL) == SCHEDC_EINVAL);
  schedc_comm *nc = (schedc_comm *)1;
  CHECK(schedc_comm_shrink(c[0], NULL, &nc) == SCHEDC_EINVAL && nc == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "already shrank");
  CHECK(schedc_comm_shrink(NULL, NULL, &nc) == SCHEDC_EINVAL);
  CHECK(schedc_comm_parent_rank(NULL, 0) == -1 && schedc_comm_parent_rank(c[0], 3) == -1 &&
        schedc_comm_parent_rank(c[0], 2) == 2);
  for (int r = 0; r < 3; r++) schedc_comm_free(c[r]);
}

/* bench: n shm ranks run step after step; the parent SIGKILLs rank n-1 in the middle of the
 * calls and reads, per survivor, when its call failed, when its shrink returned and when its
 * first step after the shrink ended (CLOCK_MONOTONIC is one clock for every process). */
typedef struct bshared { double t_kill; rk r[MAXR]; } bshared;
static void bench_rank(rk *k) {
  schedc_comm *c = k->c;
  float out[COUNT];
  for (;;) {
    schedc_status st = step_call(c, 0, out);
    if (st == SCHEDC_OK) {
      k->done = 1; /* it stepped: the parent kills only once every rank has */
      continue;
    }
    k->t_err = now_s();
    schedc_comm *nc = NULL;
    if (schedc_comm_shrink(c, NULL, &nc) != SCHEDC_OK) {
      snprintf(k->err, sizeof k->err, "shrink: %s", schedc_errmsg());
      break;
    }
    k->t_shrunk = now_s();
    if ((st = step_call(nc, 0, out)) != SCHEDC_OK) snprintf(k->err, sizeof k->err, "step: %s", schedc_errmsg());
    else if (memcmp(out, g_want[0], sizeof out)) snprintf(k->err, sizeof k->err, "step: other bits");
    else k->t_step = now_s();
    schedc_comm_free(nc);
    break;
  }
  schedc_comm_free(c);
}
static int bench(int n, int reps) {
  bshared *B = mmap(NULL, sizeof *B, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  double err[64], shr[64], stp[64];
  int got = 0;
  for (int rep = 0; rep < reps && rep < 64; rep++) {
    memset(B, 0, sizeof *B);
    char job[64];
    snprintf(job, sizeof job, "shrinkbench-%d-%d", (int)getpid(), rep);
    schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
    co.timeout_s = 30;
    pid_t pid[MAXR] = {0};
    for (int r = 0; r < n; r++)
      if ((pid[r] = fork()) == 0) {
        if (schedc_comm_init_shm(r, n, job, &co, &B->r[r].c) != SCHEDC_OK) _exit(1);
        bench_rank(&B->r[r]);
        _exit(0);
      }
    for (int r = 0, waited = 0; r < n && waited < 60000; r += B->r[r].done ? 1 : 0, waited++) /* every rank stepping */
      if (!B->r[r].done) usleep(1000);
    usleep(20000);
    B->t_kill = now_s();
    kill(pid[n - 1], SIGKILL);
    for (int r = 0; r < n; r++) waitpid(pid[r], NULL, 0);
    double e = 0, s = 0, t = 0;
    int ok = 1;
    for (int r = 0; r < n - 1; r++) {
      if (!B->r[r].t_step) ok = 0, fprintf(stderr, "bench rep %d: rank %d: %s\n", rep, r, B->r[r].err);
      if (B->r[r].t_err - B->t_kill > e) e = B->r[r].t_err - B->t_kill;
      if (B->r[r].t_shrunk - B->t_kill > s) s = B->r[r].t_shrunk - B->t_kill;
      if (B->r[r].t_step - B->t_kill > t) t = B->r[r].t_step - B->t_kill;
    }
    if (!ok) { fprintf(stderr, "bench rep %d: a survivor did not go on\n", rep); continue; }
    err[got] = e, shr[got] = s, stp[got] = t, got++;
    if (getenv("SHRINK_BENCH_VERBOSE")) printf("  run %d: %.2f %.2f %.2f ms\n", rep, e * 1e3, s * 1e3, t * 1e3);
  }
  double me = 0, ms = 0, mt = 0, xe = 0, xs = 0, xt = 0;
  for (int i = 0; i < got; i++) {
    me += err[i] / got, ms += shr[i] / got, mt += stp[i] / got;
    if (err[i] > xe) xe = err[i];
    if (shr[i] > xs) xs = shr[i];
    if (stp[i] > xt) xt = stp[i];
  }
  printf("shm, %d ranks, rank %d SIGKILLed in a loop of exact steps (%d leaves of %d floats), %d runs:\n", n, n - 1, NL,
         COUNT, got);
  printf("  kill -> every survivor's error: mean %.2f ms, max %.2f ms\n", me * 1e3, xe * 1e3);
  printf("  kill -> every survivor shrunk:  mean %.2f ms, max %.2f ms\n", ms * 1e3, xs * 1e3);
  printf("  kill -> first step after it:    mean %.2f ms, max %.2f ms\n", mt * 1e3, xt * 1e3);
  munmap(B, sizeof *B);
  return got == reps ? 0 : 1;
}

int main(int argc, char **argv) {
  const char *backend = argc > 1 ? argv[1] : "threads";
  CHECK(steps_setup() == 0); /* the leaves and the reference: 12 summands, evaluated here */
  if (!strcmp(backend, "mpi")) {
    schedc_comm *c = NULL, *nc = (schedc_comm *)1;
    schedc_status st = schedc_comm_init_mpi(NULL, NULL, &c);
    if (st == SCHEDC_EUNAVAIL) SKIP_TOOL("MPI", "this build has no mpi backend");
    CHECK(st == SCHEDC_OK);
    CHECK(schedc_comm_shrink(c, NULL, &nc) == SCHEDC_EUNAVAIL && nc == NULL);
    CHECK_CONTAINS(schedc_errmsg(), "has no ULFM (MPIX_Comm_shrink)");
    schedc_comm_free(c);
    return DONE();
  }
  if (!strcmp(backend, "bench"))
    return bench(argc > 2 ? atoi(argv[2]) : 4, argc > 3 ? atoi(argv[3]) : 10);
  int full = argc > 2 && !strcmp(argv[2], "full");
  size_t bytes = MAXR * sizeof(rk);
  rk *ranks = !strcmp(backend, "shm") ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0)
                                      : calloc(MAXR, sizeof(rk));
  sweep(backend, full, ranks);
  if (!strcmp(backend, "threads")) left_out();
  if (!strcmp(backend, "shm")) munmap(ranks, bytes);
  else free(ranks);
  steps_free();
  return DONE();
}
