/*
 * inject.c — test-only fault injection from SCHEDC_INJECT, a comma-separated list of
 *   kill:RANK:STEP    RANK dies when it reaches STEP, or the end of its part of the plan if that
 *                     comes first, or when its call fails if that comes first (a process gets
 *                     SIGKILL; a thread rank stops, marked dead): a rank named always dies; up
 *                     to SC_INJECT_KILLS items, for as many ranks (two at once: kill:1:0,kill:3:0)
 *   delay:RANK:US     RANK sleeps US microseconds at the start of each of its steps
 *   jitter:SEED:US    every rank sleeps a pseudo-random 0..US microseconds at each step
 *   flipout:RANK      RANK flips one bit of its result after each collective (a fault after the
 *                     collective: for SCHEDC_VERIFY=digest to catch)
 *   flip:RANK:STEP[:BIT]  one bit (BIT modulo the first slice's bits; default its middle) of the
 *                     payload RANK sends at STEP is flipped after its CRC32C was computed, on the
 *                     first transfer out of RANK in STEP (a link fault: for checksum to catch).
 *                     Once per call; a repair's resend is clean.
 *   arith:RANK:STEP[:BIT] one bit (BIT modulo the slice's bits; default its middle) of what RANK's
 *                     first reduce at STEP computed is flipped, after its sources were checked and
 *                     before its result is hashed, published or sent (a faulty ALU: checksums see a
 *                     consistent, wrong partial sum; exact mode's identity check catches it). The
 *                     CPU executor's and the MPI backend's reduces; once per call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "crc.h"
#include "inject.h"
#include "log.h"
#include "err.h"

static void sleep_us(unsigned us) {
  struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

int sc_inject_step(const sc_inject *in, int rank, uint32_t step, uint64_t seq) {
  int kill_at = in->kill_rank >= 0 ? sc_inject_kill_step(in, rank) : -1;
  if (kill_at >= 0 && (int)step >= kill_at) return 1;
  if (in->delay_rank == rank && in->delay_us) sleep_us((unsigned)in->delay_us);
  if (in->jitter_us) {
    uint64_t h = (uint64_t)in->jitter_seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)rank << 32) ^ step ^ seq * 31;
    h ^= h >> 29; h *= 0xbf58476d1ce4e5b9ull; h ^= h >> 32;
    sleep_us((unsigned)(h % (in->jitter_us + 1)));
  }
  return 0;
}

void sc_inject_flip(const sc_inject *in, void *buf, size_t bytes, const char *coll, int dst, uint32_t step) {
  size_t bit = in->flip_bit >= 0 ? (size_t)in->flip_bit % (bytes * 8) : bytes * 4 + 3;
  ((unsigned char *)buf)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  sc_log(SCHEDC_LOG_WARN, "inject: %s: flipped bit %zu of the payload rank %d sends to rank %d at step %u", coll,
          bit, in->flip_rank, dst, step);
}

void sc_inject_arith(sc_inject *in, void *buf, size_t bytes, const char *coll, int rank, uint32_t step, uint32_t *crc) {
  if (!in->arith_armed || rank != in->arith_rank || step != (uint32_t)in->arith_step || !bytes) return;
  in->arith_armed = 0;
  size_t bit = in->arith_bit >= 0 ? (size_t)in->arith_bit % (bytes * 8) : bytes * 4 + 3;
  ((unsigned char *)buf)[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  if (crc) *crc = sc_crc32c(buf, bytes);
  sc_log(SCHEDC_LOG_WARN, "inject: %s: flipped bit %zu of what rank %d's reduce computed at step %u", coll, bit, rank,
         step);
}

schedc_status sc_inject_parse(const char *spec, sc_inject *out) {
  memset(out, 0, sizeof *out);
  out->kill_rank = out->delay_rank = out->flip_rank = out->flipout_rank = out->arith_rank = -1;
  out->flip_bit = out->arith_bit = -1;
  if (!spec || !*spec) return SCHEDC_OK;
  char buf[256];
  if (strlen(spec) >= sizeof buf) /* never a truncated, different list */
    return sc_err(SCHEDC_EINVAL, "SCHEDC_INJECT is %zu characters long; at most %zu", strlen(spec), sizeof buf - 1);
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    char kind[16];
    long a, b, bit;
    char tail;
    if (sscanf(item, "flipout:%ld%c", &a, &tail) == 1 && a >= 0 && a < 1 << 20) { out->flipout_rank = (int)a; continue; }
    if (sscanf(item, "flip:%ld:%ld:%ld%c", &a, &b, &bit, &tail) == 3 && a >= 0 && b >= 0 && bit >= 0 &&
        a < 1 << 20 && b < 1 << 30) {
      out->flip_rank = (int)a;
      out->flip_step = (int)b;
      out->flip_bit = bit;
      continue;
    }
    if (sscanf(item, "arith:%ld:%ld:%ld%c", &a, &b, &bit, &tail) == 3 && a >= 0 && b >= 0 && bit >= 0 &&
        a < 1 << 20 && b < 1 << 30) {
      out->arith_rank = (int)a;
      out->arith_step = (int)b;
      out->arith_bit = bit;
      continue;
    }
    if (sscanf(item, "%15[a-z]:%ld:%ld%c", kind, &a, &b, &tail) != 3 || a < 0 || b < 0 || a > 1 << 30 || b > 1 << 30)
      return sc_err(SCHEDC_EINVAL, "SCHEDC_INJECT: bad item '%s' (kill:RANK:STEP, delay:RANK:US, jitter:SEED:US, flip:RANK:STEP[:BIT], "
                    "arith:RANK:STEP[:BIT], flipout:RANK)", item);
    if (!strcmp(kind, "kill")) {
      int i = 0;
      while (i < out->nkill && out->kill_ranks[i] != (int)a) i++; /* a rank named again: its last step */
      if (i == SC_INJECT_KILLS)
        return sc_err(SCHEDC_EINVAL, "SCHEDC_INJECT: more than %d kill items", SC_INJECT_KILLS);
      out->kill_ranks[i] = (int)a;
      out->kill_steps[i] = (int)b;
      if (i == out->nkill) out->nkill++;
      out->kill_rank = out->kill_ranks[0];
      out->kill_step = out->kill_steps[0];
    }
    else if (!strcmp(kind, "delay")) { out->delay_rank = (int)a; out->delay_us = (int)b; }
    else if (!strcmp(kind, "jitter")) { out->jitter_seed = (unsigned)a; out->jitter_us = (unsigned)b; }
    else if (!strcmp(kind, "flip") && a < 1 << 20) { out->flip_rank = (int)a; out->flip_step = (int)b; }
    else if (!strcmp(kind, "arith") && a < 1 << 20) { out->arith_rank = (int)a; out->arith_step = (int)b; }
    else return sc_err(SCHEDC_EINVAL, "SCHEDC_INJECT: unknown fault '%s' (kill, delay, jitter, flip, arith, flipout)", kind);
  }
  return SCHEDC_OK;
}

/* A rank named by a fault that the communicator does not have would make the fault silently
 * never happen (the run then "passes" the test it was meant to fail). */
static schedc_status bad_rank(const char *what, int rank, int nranks) {
  return sc_err(SCHEDC_EINVAL, "SCHEDC_INJECT %s: rank %d out of range: this communicator has ranks 0 to %d",
                what, rank, nranks - 1);
}

int sc_inject_kill_step(const sc_inject *in, int rank) {
  for (int i = 0; i < in->nkill; i++)
    if (in->kill_ranks[i] == rank) return in->kill_steps[i];
  return -1;
}

void sc_inject_remap(const sc_inject *in, const int *newrank, int oldn, sc_inject *out) {
  *out = *in;
#define SC_REMAP_(f) out->f = in->f >= 0 && in->f < oldn ? newrank[in->f] : -1
  SC_REMAP_(delay_rank);
  SC_REMAP_(flip_rank);
  SC_REMAP_(flipout_rank);
  SC_REMAP_(arith_rank);
#undef SC_REMAP_
  out->nkill = 0;
  for (int i = 0; i < in->nkill; i++) {
    int r = in->kill_ranks[i] < oldn ? newrank[in->kill_ranks[i]] : -1;
    if (r < 0) continue; /* that process is gone: its death happened */
    out->kill_ranks[out->nkill] = r;
    out->kill_steps[out->nkill++] = in->kill_steps[i];
  }
  out->kill_rank = out->nkill ? out->kill_ranks[0] : -1;
  out->kill_step = out->nkill ? out->kill_steps[0] : 0;
  out->arith_armed = 0;
}

schedc_status sc_inject_check(const sc_inject *in, int nranks, const char *backend, unsigned caps) {
  for (int i = 0; i < in->nkill; i++)
    if (in->kill_ranks[i] >= nranks) return bad_rank("kill", in->kill_ranks[i], nranks);
  if (in->delay_rank >= nranks) return bad_rank("delay", in->delay_rank, nranks);
  if (in->flip_rank >= nranks) return bad_rank("flip", in->flip_rank, nranks);
  if (in->flipout_rank >= nranks) return bad_rank("flipout", in->flipout_rank, nranks);
  if (in->arith_rank >= nranks) return bad_rank("arith", in->arith_rank, nranks);
  /* a backend without executor steps (mpi: messages per step; cuda: steps inside the kernels) has
   * nothing to stop or slow; flip and flipout it injects where it can (its own checks say) */
  if (backend && !(caps & SC_CAP_INJECT_STEPS) && (in->kill_rank >= 0 || in->delay_rank >= 0 || in->jitter_us))
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT kill, delay and jitter act at the CPU executor's steps and are "
                  "not available on the %s backend; flip:RANK:STEP and flipout:RANK are", backend);
  /* arith acts where a reduce is computed in host memory: the CPU executor's and MPI's (a
   * stream-ordered backend reduces inside its kernels, which have no such hook) */
  if (backend && !(caps & SC_CAP_HOST_RESULT) && in->arith_rank >= 0)
    return sc_err(SCHEDC_EUNAVAIL, "SCHEDC_INJECT arith:RANK:STEP acts at the reduces of the threads, shm and mpi "
                  "backends and is not available on the %s backend", backend);
  return SCHEDC_OK;
}
