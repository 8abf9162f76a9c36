/*
 * train_mlp.c — a small data-parallel trainer whose weights are bit-for-bit repeatable: every
 * rank holds the model, computes gradients on its micro-batches, and schedc sums them in a
 * proven order. Synthetic, deterministic data (a hash of the sample index); an MLP d->H->1 with
 * tanh and logistic loss; SGD with momentum. Run under `schedc launch -n N -- train_mlp ...`.
 *
 *   --steps S            training steps (40)
 *   --microbatches L     micro-batches per step (default N); rank r owns micro-batches r*L/N ...
 *   --order canonical    sum micro-batch gradients in the canonical tree (schedc_accum + a plan
 *                        verified as canonical): the same weights for any N dividing L
 *   --order exact        sum micro-batch gradients exactly (schedc_accum with SCHEDC_SUM_EXACT and
 *                        schedc_accum_allreduce: each leaf on one fixed-point grid shared by all
 *                        ranks, int64 sums): the same weights for any N dividing L, powers of two
 *                        or not (L = 12: N = 1, 2, 3, 4, 6), on any plan
 *   --wire q8|q16        gradients summed as 8- or 16-bit integers on one grid (docs/compression.md);
 *                        with --order exact each micro-batch leaf is quantized on its own
 *                        (schedc_accum_allreduce_v2): the same weights for any N dividing L
 *   --topk F             each rank sends its F * NPARAM largest gradient elements (F in (0, 1])
 *   --feedback           error feedback for --wire or --topk: what a step did not send is added to
 *                        the next step's gradient (a residual per rank; not with --order exact,
 *                        whose leaves are summed without one, nor with --checkpoint/--resume, whose
 *                        format does not hold it)
 *   --schedule FILE      the canonical schedule (default schedules/tree.lua, binomial)
 *   --dtype f32|bf16     gradient type on the wire (bf16: f32 partials, one rounding)
 *   --checkpoint DIR     write DIR/ckpt.bin every 10 steps and at the end (atomic, checksummed;
 *                        DIR and its parents are created)
 *   --resume DIR         continue from DIR/ckpt.bin (refused if corrupted)
 * Last line: "weights digest: <16 hex digits>".
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schedc/schedc.h"

enum { D = 8, H = 16, NSAMPLES = 8192, BATCH = 256 };
#define NPARAM (H * D + H + H + 1)

static uint64_t mix(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull; x ^= x >> 27; x *= 0x94d049bb133111ebull; return x ^ (x >> 31);
}
static float unit(uint64_t h) { return (float)(h >> 40) / 16777216.0f * 2.0f - 1.0f; }

/* Sample i: features in [-1, 1), label from a fixed nonlinear rule. */
static void sample(int i, float *x, float *y) {
  float s = 0;
  for (int k = 0; k < D; k++) x[k] = unit(mix((uint64_t)i * 131 + (uint64_t)k));
  for (int k = 0; k < D; k++) s += (k % 2 ? 0.7f : -0.4f) * x[k] + 0.3f * x[k] * x[(k + 1) % D];
  *y = s > 0.05f ? 1.0f : 0.0f;
}

/* Loss and gradient (added into g) of one sample; parameters p = [W1 | b1 | w2 | b2]. */
static float sample_grad(const float *p, int i, float *g) {
  float x[D], y, h[H], z = p[H * D + 2 * H];
  sample(i, x, &y);
  for (int j = 0; j < H; j++) {
    float a = p[H * D + j];
    for (int k = 0; k < D; k++) a = a + p[j * D + k] * x[k];
    h[j] = tanhf(a);
    z = z + p[H * D + H + j] * h[j];
  }
  float q = 1.0f / (1.0f + expf(-z)), dz = q - y;
  for (int j = 0; j < H; j++) {
    float dh = dz * p[H * D + H + j] * (1.0f - h[j] * h[j]);
    for (int k = 0; k < D; k++) g[j * D + k] += dh * x[k];
    g[H * D + j] += dh;
    g[H * D + H + j] += dz * h[j];
  }
  g[H * D + 2 * H] += dz;
  return y > 0.5f ? -logf(q + 1e-7f) : -logf(1.0f - q + 1e-7f);
}

/* Gradient of micro-batch mb of L in step `step`: samples [mb*BATCH/L, (mb+1)*BATCH/L) of the
 * step's batch (equal sizes when L divides BATCH), summed in index order. */
static float microbatch_grad(const float *p, int step, int mb, int L, float *g) {
  memset(g, 0, NPARAM * sizeof *g);
  float loss = 0;
  for (int s = mb * BATCH / L; s < (mb + 1) * BATCH / L; s++) loss += sample_grad(p, (step * BATCH + s) % NSAMPLES, g);
  return loss;
}

typedef struct ckpt { char magic[8]; int32_t step, nparam; float p[NPARAM], v[NPARAM]; uint64_t sum; } ckpt;

static uint64_t ckpt_sum(const ckpt *c) { return schedc_digest(c, offsetof(ckpt, sum)); }

static int save(const char *dir, int step, const float *p, const float *v) {
  ckpt c;
  memset(&c, 0, sizeof c);
  memcpy(c.magic, "SCMLPCK1", 8);
  c.step = step;
  c.nparam = NPARAM;
  memcpy(c.p, p, sizeof c.p);
  memcpy(c.v, v, sizeof c.v);
  c.sum = ckpt_sum(&c);
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/ckpt.bin", dir);
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  if (!f) { fprintf(stderr, "train_mlp: cannot write %s: %s\n", tmp, strerror(errno)); return -1; }
  int bad = fwrite(&c, sizeof c, 1, f) != 1;
  bad |= fflush(f) != 0;
  bad |= fsync(fileno(f)) != 0;
  bad |= fclose(f) != 0;
  if (bad || rename(tmp, path) != 0) { fprintf(stderr, "train_mlp: cannot write %s\n", path); remove(tmp); return -1; }
  return 0;
}

static int load(const char *dir, int *step, float *p, float *v) {
  char path[4096];
  snprintf(path, sizeof path, "%s/ckpt.bin", dir);
  ckpt c;
  FILE *f = fopen(path, "rb");
  if (!f) { fprintf(stderr, "train_mlp: cannot open %s: %s\n", path, strerror(errno)); return -1; }
  size_t got = fread(&c, 1, sizeof c, f);
  fclose(f);
  if (got != sizeof c || memcmp(c.magic, "SCMLPCK1", 8) || c.nparam != NPARAM || c.sum != ckpt_sum(&c)) {
    fprintf(stderr, "train_mlp: %s is corrupted or not a checkpoint of this model (checksum mismatch); refusing it\n", path);
    return -1;
  }
  *step = c.step;
  memcpy(p, c.p, sizeof c.p);
  memcpy(v, c.v, sizeof c.v);
  return 0;
}

/* A whole number in [lo, hi] (no sign, blank or trailing text): 0, or -1. */
static int parse_int(const char *s, int lo, int hi, int *out) {
  if (*s < '0' || *s > '9') return -1;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* mkdir -p: the checkpoint folder and its parents (the README's /tmp/ck need not exist). */
static int make_dir(const char *dir) {
  char buf[4096];
  if (!*dir || snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
    fprintf(stderr, "train_mlp: --checkpoint '%s': give a folder (it is created if missing)\n", dir);
    return -1;
  }
  for (char *q = buf + 1;; q++) {
    if (*q && *q != '/') continue;
    char c = *q;
    *q = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "train_mlp: --checkpoint '%s': cannot create %s: %s\n", dir, buf, strerror(errno));
      return -1;
    }
    if (!(*q = c)) break;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "train_mlp: --checkpoint '%s' is not a folder\n", dir);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  int steps = 40, L = 0, canonical = 0, exact = 0, feedback = 0;
  schedc_call_opts copts = SCHEDC_CALL_OPTS_INIT; /* --wire, --topk, --feedback (docs/compression.md) */
  const char *ckdir = NULL, *resume = NULL, *schedule = "schedules/tree.lua";
  schedc_dtype wire = SCHEDC_F32;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--feedback")) { feedback = 1; continue; }
    if (!v) { fprintf(stderr, "train_mlp: %s needs a value\n", a); return 2; }
    if (!strcmp(a, "--steps")) { if (parse_int(v, 0, 1 << 30, &steps)) { fprintf(stderr, "train_mlp: --steps '%s' is not a step count from 0 to 2^30\n", v); return 2; } }
    else if (!strcmp(a, "--microbatches")) { if (parse_int(v, 1, BATCH, &L)) { fprintf(stderr, "train_mlp: --microbatches '%s' is not a count from 1 to %d\n", v, BATCH); return 2; } }
    else if (!strcmp(a, "--order")) {
      if (strcmp(v, "canonical") && strcmp(v, "any") && strcmp(v, "exact")) { fprintf(stderr, "train_mlp: --order '%s' (choose canonical, exact or any)\n", v); return 2; }
      canonical = !strcmp(v, "canonical");
      exact = !strcmp(v, "exact");
    }
    else if (!strcmp(a, "--schedule")) schedule = v;
    else if (!strcmp(a, "--wire")) {
      schedc_wire w;
      if (schedc_wire_parse(v, &w) != SCHEDC_OK) { fprintf(stderr, "train_mlp: --wire q8 or q16\n"); return 2; }
      copts.wire = (int)w;
    } else if (!strcmp(a, "--topk")) {
      char *end;
      copts.topk = strtod(v, &end);
      if (*end || !(copts.topk > 0 && copts.topk <= 1)) { fprintf(stderr, "train_mlp: --topk '%s' is not a fraction in (0, 1]\n", v); return 2; }
    }
    else if (!strcmp(a, "--dtype")) { if (schedc_dtype_parse(v, &wire) || (wire != SCHEDC_F32 && wire != SCHEDC_BF16)) { fprintf(stderr, "train_mlp: --dtype f32 or bf16\n"); return 2; } }
    else if (!strcmp(a, "--checkpoint")) ckdir = v;
    else if (!strcmp(a, "--resume")) resume = v;
    else { fprintf(stderr, "train_mlp: unknown option %s\n", a); return 2; }
    i++;
  }
  if ((copts.wire || copts.topk > 0) && (canonical || wire != SCHEDC_F32 || (copts.wire && copts.topk > 0) ||
                                         (copts.topk > 0 && exact))) {
    fprintf(stderr, "train_mlp: --wire goes with --order exact or any, --topk with --order any, f32, one of them\n");
    return 2;
  }
  if (feedback && (!(copts.wire || copts.topk > 0) || exact || ckdir || resume)) {
    fprintf(stderr, "train_mlp: --feedback needs --wire or --topk, and no --order exact, --checkpoint or --resume\n");
    return 2;
  }
  if (ckdir && make_dir(ckdir)) return 2; /* before training, not at the first save */
  schedc_comm *comm;
  if (schedc_comm_init_env(NULL, &comm) != SCHEDC_OK) {
    fprintf(stderr, "train_mlp: %s (start it with: schedc launch -n N -- train_mlp ...)\n", schedc_errmsg());
    return 1;
  }
  int rank = schedc_comm_rank(comm), n = schedc_comm_nranks(comm);
  if (!L) L = n;
  if (L % n) {
    if (rank == 0) fprintf(stderr, "train_mlp: %d micro-batches must split over %d ranks\n", L, n);
    schedc_comm_free(comm);
    return 2;
  }
  int m = L / n;
  schedc_plan *plan = NULL;
  if (canonical) {
    const char *defs[] = {"shape=binomial", "order=canonical"};
    schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
    lo.nranks = n;
    lo.defines = defs;
    lo.ndefines = 2;
    if (schedc_plan_from_script(schedule, &lo, &plan) != SCHEDC_OK) {
      if (rank == 0) fprintf(stderr, "train_mlp: %s\n", schedc_errmsg());
      schedc_comm_free(comm);
      return 1;
    }
  }
  float p[NPARAM], v[NPARAM], g[NPARAM], gm[NPARAM], residual[NPARAM] = {0};
  if (feedback) copts.residual = residual; /* this rank's: what its steps did not send yet */
  for (int i = 0; i < NPARAM; i++) { p[i] = 0.3f * unit(mix(0xabcdefull + (uint64_t)i)); v[i] = 0; }
  int start = 0;
  if (resume && load(resume, &start, p, v)) { schedc_comm_free(comm); schedc_plan_free(plan); return 1; }
  schedc_accum *acc = NULL;
  if ((canonical || exact) &&
      schedc_accum_create(NPARAM, SCHEDC_F32, exact ? SCHEDC_SUM_EXACT : SCHEDC_SUM, rank * m, m, &acc) != SCHEDC_OK) {
    fprintf(stderr, "train_mlp: %s\n", schedc_errmsg());
    return 1;
  }
  const float lr = 0.05f, mu = 0.9f;
  for (int step = start; step < steps; step++) {
    double loss = 0;
    schedc_status st = SCHEDC_OK;
    if (exact) { /* the leaves summed exactly, every rank's, in one call: g is the global sum */
      schedc_accum_reset(acc);
      for (int k = 0; k < m; k++) {
        int mb = rank * m + (m - 1 - k);
        loss += microbatch_grad(p, step, mb, L, gm);
        schedc_accumulate(acc, mb, gm);
      }
      st = schedc_accum_allreduce_v2(acc, g, comm, NULL, &copts); /* copts.wire: each leaf quantized */
    } else if (canonical) {
      schedc_accum_reset(acc);
      for (int k = 0; k < m; k++) { /* micro-batches in reverse: arrival order must not matter */
        int mb = rank * m + (m - 1 - k);
        loss += microbatch_grad(p, step, mb, L, gm);
        schedc_accumulate(acc, mb, gm);
      }
      schedc_accum_result(acc, g);
    } else {
      memset(g, 0, sizeof g);
      for (int k = 0; k < m; k++) {
        loss += microbatch_grad(p, step, rank * m + k, L, gm);
        for (int i = 0; i < NPARAM; i++) g[i] += gm[i];
      }
    }
    if (exact) {
      /* summed above */
    } else if (wire == SCHEDC_BF16) {
      uint16_t gb[NPARAM];
      for (int i = 0; i < NPARAM; i++) { uint32_t u; memcpy(&u, &g[i], 4); u += 0x7fff + ((u >> 16) & 1); gb[i] = (uint16_t)(u >> 16); }
      st = schedc_allreduce(gb, gb, NPARAM, SCHEDC_BF16, SCHEDC_SUM, comm, NULL);
      for (int i = 0; i < NPARAM; i++) { uint32_t u = (uint32_t)gb[i] << 16; memcpy(&g[i], &u, 4); }
    } else if (copts.wire || copts.topk > 0) { /* compressed: a copy in, the residual kept apart from both */
      memcpy(gm, g, sizeof g);
      st = schedc_allreduce_v2(gm, g, NPARAM, SCHEDC_F32, SCHEDC_SUM, comm, plan, &copts);
    } else {
      st = schedc_allreduce(g, g, NPARAM, SCHEDC_F32, SCHEDC_SUM, comm, plan);
    }
    double tot = loss;
    if (st == SCHEDC_OK) st = schedc_allreduce(&loss, &tot, 1, SCHEDC_F64, SCHEDC_SUM, comm, NULL);
    if (st != SCHEDC_OK) { fprintf(stderr, "train_mlp: rank %d: %s\n", rank, schedc_errmsg()); return 1; }
    for (int i = 0; i < NPARAM; i++) {
      v[i] = mu * v[i] + g[i] / (float)BATCH;
      p[i] = p[i] - lr * v[i];
    }
    if (rank == 0 && ((step + 1) % 5 == 0 || step + 1 == steps)) printf("step %3d  loss %.5f\n", step + 1, tot / BATCH);
    if (ckdir && rank == 0 && ((step + 1) % 10 == 0 || step + 1 == steps) && save(ckdir, step + 1, p, v)) return 1;
  }
  int ok = 0;
  schedc_replicas_agree(comm, p, sizeof p, &ok);
  if (rank == 0) {
    printf("replicas agree: %s\n", ok ? "yes" : "NO");
    printf("weights digest: %016llx\n", (unsigned long long)schedc_digest(p, sizeof p));
  }
  schedc_accum_free(acc);
  schedc_plan_free(plan);
  schedc_comm_free(comm);
  return ok ? 0 : 1;
}
