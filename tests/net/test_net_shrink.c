/*
 * test_net_shrink.c — schedc_comm_shrink on the net backend (forked ranks from a schedc_uid_net
 * id, some on pretend hosts: UCX over TCP between them, shared memory within one). Ranks die
 * (SCHEDC_INJECT kill inside an exact allreduce, one or two at once; the survivors' coordinator
 * killed while they agree; a second death after the first shrink), the survivors shrink, agree on where to go on and redo the step with
 * the 12 exact leaves spread over whoever is left: every survivor must end both steps with the bits
 * of exact_ref.h's evaluation of the 12 leaves (the run that never failed) and hold the same member
 * list (asked again over the new communicator: a split group would gather another). Also: shrink
 * with no failure gives everyone; a survivor that joins too late is refused, naming why, while the
 * others go on; a survivor without a quorum (two of three one-rank hosts lost) is refused; a rank
 * named for a kill whose call fails first dies then. Exit 77 when schedc has no net backend.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
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

/* One rank's part and what it saw: shared with the parent. */
typedef struct rk {
  int nshrink, done;
  int members[MAXR], nmembers; /* the final communicator's members, as old ranks (-1: lists differ) */
  float out[STEPS][COUNT];
  schedc_status st;          /* the failure it could not go on from (0: none) */
  char err[480];
  double t_err, t_shrunk;    /* when its first call failed, its first shrink returned (CLOCK_MONOTONIC) */
} rk;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* What a case does beside SCHEDC_INJECT's kills. */
typedef struct how {
  int stall_ms;              /* the rank `who` waits this long after its call failed, then: */
  int who, dies;             /* dies: SIGKILL (the coordinator dies while the others agree); else joins late */
  int healthy;               /* no failure: every rank shrinks after step 0 */
  int second;                /* a rank that dies (SIGKILL) right after its first shrink: the survivors
                              * shrink the shrunk communicator (its worker's next generation); -1 */
  int named;                 /* a rank SCHEDC_INJECT names to die at a step past the plan's end, whose
                              * call fails first (a killed rank's data never comes): it must die
                              * then, not live on into the shrink; -1 */
} how;

static void run_rank(rk *k, schedc_comm *c, int rank, const how *h) {
  int cur = 0, resync = 0; /* resync: agree on the step first (after a shrink) */
  while (cur < STEPS) {
    schedc_status st;
    if (resync) { /* go on from the earliest step a survivor has not finished */
      int64_t mine = cur, lo = -1;
      if ((st = schedc_allreduce(&mine, &lo, 1, SCHEDC_I64, SCHEDC_MIN, c, NULL)) == SCHEDC_OK) {
        cur = (int)lo;
        resync = 0;
        continue;
      }
    } else {
      st = step_call(c, cur, k->out[cur]);
      if (st == SCHEDC_OK && !(h->healthy && cur == 0 && !k->nshrink)) { cur++; continue; }
      if (st == SCHEDC_OK) cur++; /* healthy: shrink after step 0 anyway */
    }
    if (st != SCHEDC_OK && !k->t_err) k->t_err = now_s();
    if (st != SCHEDC_OK && ((st != SCHEDC_EPEER && st != SCHEDC_ETIMEOUT) || k->nshrink > (h->second >= 0))) {
      k->st = st;
      snprintf(k->err, sizeof k->err, "%s %d: %s", resync ? "agreeing on the step after shrink" : "step",
               resync ? k->nshrink : cur, schedc_errmsg());
      break;
    }
    if (rank == h->who && h->stall_ms) {
      usleep((useconds_t)h->stall_ms * 1000);
      if (h->dies) raise(SIGKILL);
    }
    schedc_comm *nc = NULL;
    if ((st = schedc_comm_shrink(c, NULL, &nc)) != SCHEDC_OK) {
      k->st = st;
      snprintf(k->err, sizeof k->err, "shrink: %s", schedc_errmsg());
      break;
    }
    if (!k->t_shrunk) k->t_shrunk = now_s();
    schedc_comm_free(c);
    c = nc;
    k->nshrink++;
    if (rank == h->second && k->nshrink == 1) raise(SIGKILL);
    resync = 1;
  }
  if (cur == STEPS) {
    k->done = 1;
    k->nmembers = schedc_comm_nranks(c);
    for (int i = 0; i < k->nmembers && i < MAXR; i++) k->members[i] = schedc_comm_parent_rank(c, i);
    int mine = rank, all[MAXR];
    if (schedc_allgather(&mine, all, 1, SCHEDC_I32, c, NULL) != SCHEDC_OK ||
        memcmp(all, k->members, (size_t)k->nmembers * sizeof(int)))
      k->nmembers = -1;
  }
  schedc_comm_free(c);
}

/* One case: n ranks, R per pretend host, `killed` (a set) die by SCHEDC_INJECT kill at plan step
 * `step`; want: the members every survivor must end with (a set; 0: every survivor must fail, its
 * message holding `msg`). Returns 1 if it failed. */
static int one_case(const char *name, int n, int R, unsigned killed, int step, const how *h, unsigned want,
                    const char *msg) {
  char inj[128] = "";
  size_t len = 0;
  for (int r = 0; r < n; r++)
    if (killed >> r & 1) len += (size_t)snprintf(inj + len, sizeof inj - len, "%skill:%d:%d", len ? "," : "", r, step);
  if (h->named >= 0) snprintf(inj + len, sizeof inj - len, "%skill:%d:1000", len ? "," : "", h->named);
  if (inj[0]) setenv("SCHEDC_INJECT", inj, 1);
  else unsetenv("SCHEDC_INJECT");
  struct box { _Atomic int state; schedc_uid id; char err[256]; rk r[MAXR]; } *box =
      mmap(NULL, sizeof *box, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (box == MAP_FAILED) return 1;
  memset(box, 0, sizeof *box);
  schedc_comm_opts co = SCHEDC_COMM_OPTS_INIT;
  co.timeout_s = h->stall_ms && !h->dies ? 1 : 10;
  pid_t pid[MAXR];
  fflush(stdout);
  for (int r = 0; r < n; r++) {
    if ((pid[r] = fork()) == 0) {
      char hid[32];
      snprintf(hid, sizeof hid, "shrinkhost%d", r / R);
      setenv("SCHEDC_HOST_ID", hid, 1);
      if (r == 0) {
        schedc_status st = schedc_uid_net(&box->id);
        if (st != SCHEDC_OK) snprintf(box->err, sizeof box->err, "%s", schedc_errmsg());
        box->state = st == SCHEDC_OK ? 1 : st == SCHEDC_EUNAVAIL ? 3 : 2;
      }
      for (int k = 0; k < 30000 && box->state == 0; k++) usleep(1000);
      if (box->state != 1) _exit(0);
      schedc_comm *c = NULL;
      if (schedc_comm_init_net(r, n, &box->id, &co, &c) != SCHEDC_OK) {
        snprintf(box->r[r].err, sizeof box->r[r].err, "init: %s", schedc_errmsg());
        box->r[r].st = SCHEDC_EINTERNAL;
        _exit(1);
      }
      run_rank(&box->r[r], c, r, h);
      exit(0); /* atexit: in the ASan tree LeakSanitizer checks what the shrink left (status 23) */
    }
  }
  int status[MAXR];
  for (int r = 0; r < n; r++) waitpid(pid[r], &status[r], 0);
  unsetenv("SCHEDC_INJECT");
  if (box->state == 3) {
    munmap(box, sizeof *box);
    SKIP_TOOL("UCX", "this build has no net backend (Debian: libucx-dev)");
  }
  int bad = box->state != 1, wl[MAXR], k = 0;
  if (bad) fprintf(stderr, "  id: %s\n", box->err);
  for (int r = 0; r < n; r++)
    if (want >> r & 1) wl[k++] = r;
  for (int r = 0; r < n && !bad; r++) {
    rk *x = &box->r[r];
    if (killed >> r & 1 || (h->dies && r == h->who) || r == h->second || r == h->named) continue;
    int ok;
    if (!(want >> r & 1)) /* left out: refused, naming why */
      ok = !x->done && x->st == SCHEDC_EPEER && msg && strstr(x->err, msg);
    else {
      ok = x->done && x->nmembers == k && !memcmp(x->members, wl, (size_t)k * sizeof(int)) && x->nshrink == 1 + (h->second >= 0);
      for (int s = 0; s < STEPS && ok; s++) ok = !memcmp(x->out[s], g_want[s], sizeof g_want[s]);
    }
    if (ok && !(WIFEXITED(status[r]) && WEXITSTATUS(status[r]) == 0)) {
      ok = 0;
      fprintf(stderr, "  rank %d: exit status %#x (a sanitizer's report?)\n", r, status[r]);
    }
    if (!ok) {
      bad++;
      fprintf(stderr, "  rank %d: done %d, shrinks %d, members %d (want %d), err '%s'\n", r, x->done, x->nshrink,
              x->nmembers, want >> r & 1 ? k : 0, x->err);
    }
  }
  double e0 = 0, s1 = 0; /* the first survivor's error, the last survivor's shrink */
  for (int r = 0; r < n; r++) {
    const rk *x = &box->r[r];
    if (x->t_err && (!e0 || x->t_err < e0)) e0 = x->t_err;
    if (x->t_shrunk > s1) s1 = x->t_shrunk;
  }
  printf("%s %s: n=%d, %d per host, killed %#x at step %d", bad ? "FAIL" : "ok", name, n, R, killed, step);
  if (e0 && s1 > e0) printf(" (every survivor shrunk %.1f ms after the first error)", (s1 - e0) * 1e3);
  printf("\n");
  munmap(box, sizeof *box);
  return bad != 0;
}

int main(void) {
  CHECK(steps_setup() == 0); /* the leaves and the reference: 12 summands, evaluated here */
  const how plain = {0, -1, 0, 0, -1, -1}, healthy = {0, -1, 0, 1, -1, -1};
  int failed = 0;
  /* one rank lost inside the allreduce, on one host (its process watched) */
  failed += one_case("one lost, one host", 3, 3, 1u << 1, 1, &plain, 0x5, NULL);
  /* rank 0, everyone's first coordinator, lost across pretend hosts (its connection resets) */
  failed += one_case("rank 0 lost, 2 hosts", 4, 2, 1u << 0, 2, &plain, 0xe, NULL);
  /* two ranks at once, on three pretend hosts */
  failed += one_case("two lost at once, 3 hosts", 5, 2, 1u << 1 | 1u << 4, 0, &plain, 0xd, NULL);
  /* rank 2 is named to die past the plan's end, but rank 1's death at step 0 fails its call first:
   * it dies then (SCHEDC_INJECT's "a rank named always dies"), so the one shrink leaves rank 0 */
  const how named = {0, -1, 0, 0, -1, 2};
  failed += one_case("a named rank's call fails first", 3, 3, 1u << 1, 0, &named, 0x1, NULL);
  /* two of three lost, each on a host of its own: no survivor on their hosts saw their processes
   * end (UCX says "endpoint timeout", as for a link down), so they may be alive behind a split:
   * the one survivor is no quorum and is refused, naming why */
  failed += one_case("two of three hosts lost: no quorum", 3, 1, 1u << 1 | 1u << 2, 1, &plain, 0,
                     "only 1 of the 3 ranks not known dead agreed to go on");
  /* the coordinator (rank 0) dies while the others agree: rank 1 takes over */
  const how coord = {300, 0, 1, 0, -1, -1};
  failed += one_case("coordinator dies in the agreement", 4, 4, 1u << 3, 1, &coord, 0x6, NULL);
  /* a second death after the first shrink, across two pretend hosts: the shrunk communicator shrinks
   * again (its worker's third generation: the first two's late messages must not match) */
  const how twice = {0, -1, 0, 0, 2, -1};
  failed += one_case("shrunk twice, 2 hosts", 5, 3, 1u << 4, 1, &twice, 0xb, NULL);
  /* no failure: shrink gives everyone */
  failed += one_case("no failure", 3, 2, 0, 0, &healthy, 0x7, NULL);
  /* rank 2 joins after the timeout: the others go on without it; it is told it was left out */
  const how late = {2500, 2, 0, 0, -1, -1};
  failed += one_case("a late rank left out", 4, 4, 1u << 3, 1, &late, 0x3, "rank 2 was left out");
  steps_free();
  CHECK(failed == 0);
  return DONE();
}
