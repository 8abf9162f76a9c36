/*
 * forked.h — the cuda tests' ranks as forked processes (a process per GPU): fn(rank) in n
 * children sharing a fresh job id, each exiting 0 only if its own CHECKs passed. Include after
 * check.h.
 */
#ifndef SC_TEST_FORKED_H
#define SC_TEST_FORKED_H
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char job[64]; /* the current group's job id (schedc_comm_init_cuda_rank) */

/* 1 if every child exited 0. */
static int in_processes(int n, void (*fn)(int rank)) {
  static int seq;
  snprintf(job, sizeof job, "t%d-%d", (int)getpid(), seq++);
  pid_t pid[16];
  fflush(stdout);
  fflush(stderr);
  for (int r = 0; r < n && r < 16; r++)
    if ((pid[r] = fork()) == 0) {
      tc_fail = 0; /* the child reports its own CHECKs, not the parent's earlier failures */
      fn(r);
      fflush(stdout);
      _exit(tc_fail ? 1 : 0);
    }
  int ok = 1;
  for (int r = 0; r < n && r < 16; r++) {
    int ws = 0;
    waitpid(pid[r], &ws, 0);
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
      fprintf(stderr, "rank %d's process failed (status 0x%x)\n", r, ws);
      ok = 0;
    }
  }
  /* A rank these tests kill or let die cannot unlink its bootstrap's segments: the parent,
   * which named the job, removes whatever the group left (none when every rank freed). */
  char name[96];
  snprintf(name, sizeof name, "/schedc-%s-ctl", job);
  shm_unlink(name);
  for (int r = 0; r < 16; r++) {
    snprintf(name, sizeof name, "/schedc-%s-r%d", job, r);
    shm_unlink(name);
  }
  return ok;
}
#endif
