/*
 * train_mlp.c — a small data-parallel trainer whose weights are bit-for-bit repeatable: every
 * rank holds the model, computes gradients on its micro-batches, and schedc sums them in a
 * proven order. Synthetic, deterministic data (a hash of the sample index); an MLP d->H->1 with
 * tanh and logistic loss; SGD with momentum. Run under `schedc launch -n N -- train_mlp ...`.
 *
 *   --steps S            training steps (40)
 *   --microbatches L     micro-batches per step (default N). Micro-batch mb is samples
 *                        [mb*256/L, (mb+1)*256/L) of the step's batch, whoever computes it; rank r
 *                        of N computes micro-batches [r*L/N, (r+1)*L/N): assigned by index
 *   --order canonical    sum micro-batch gradients in the canonical tree (schedc_accum + a plan
 *                        verified as canonical): the same weights for any N dividing L with L/N a
 *                        power of two
 *   --order exact        sum micro-batch gradients exactly (schedc_accum with SCHEDC_SUM_EXACT and
 *                        schedc_accum_allreduce: each leaf on one fixed-point grid shared by all
 *                        ranks, int64 sums): the same weights for any N up to L (L = 12: N = 1 to
 *                        12, blocks of unequal size included), on any plan
 *   --wire q8|q16        gradients summed as 8- or 16-bit integers on one grid (docs/compression.md);
 *                        with --order exact each micro-batch leaf is quantized on its own
 *                        (schedc_accum_allreduce_v2): the same weights for any N up to L
 *   --topk F             each rank sends its F * NPARAM largest gradient elements (F in (0, 1])
 *   --feedback           error feedback for --wire or --topk: what a step did not send is added to
 *                        the next step's gradient (a residual per rank; not with --order exact,
 *                        whose leaves are summed without one). Checkpoints hold every rank's
 *                        residual (blobs "feedback" and "residual.<r>", gathered to rank 0); --resume
 *                        then needs --feedback and the same rank count (up to 60)
 *   --schedule FILE      the canonical schedule (default schedules/tree.lua, binomial)
 *   --dtype f32|bf16     gradient type on the wire (bf16: f32 partials, one rounding)
 *   --checkpoint DIR     rank 0 writes DIR/ckpt-<step>.bin every E steps and at the end, keeping
 *                        the last K (DIR and its parents are created): the format of
 *                        docs/recovery.md — a temporary file, fsync, rename, fsync of DIR; a
 *                        CRC32C per tensor and over the whole file
 *   --every E            checkpoint every E steps (10)
 *   --keep K             checkpoints kept (3)
 *   --resume DIR         continue from the newest good checkpoint in DIR, at any N the order
 *                        allows: a truncated or corrupt one is refused, naming the file and what
 *                        failed, and the one before it is used
 *   --on-failure exit|shrink
 *                        when a rank dies (SCHEDC_EPEER): exit non-zero (default; restart with
 *                        --resume), or, with --order exact, shrink the communicator
 *                        (schedc_comm_shrink), agree on the step, and redo it on the survivors with
 *                        the lost ranks' micro-batches spread over them: the same weights
 *   --die RANK:STEP[:ckpt]
 *                        test aid: rank RANK (of the ranks started) SIGKILLs itself at the start of
 *                        step STEP, or (:ckpt) halfway through writing the checkpoint of step STEP;
 *                        may be given several times
 * Last line: "weights digest: <16 hex digits>" (rank 0).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
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

/* ---- checkpoints (docs/recovery.md "The checkpoint file"): named blobs, a CRC32C each, a CRC32C
 * of the whole file in its trailer. Little-endian, as this program's structs on x86-64/arm64. ---- */
#define CK_MAGIC "SCCKPT01"
#define CK_END "SCCKEND1"
enum { CK_VERSION = 1, CK_NAME = 64, CK_ALIGN = 64, CK_MAXBLOBS = 64 };
typedef struct ck_head { char magic[8]; uint32_t version, nblobs; uint64_t step, reserved; } ck_head;
typedef struct ck_entry { char name[CK_NAME]; uint64_t offset, nbytes; uint32_t crc, reserved; uint64_t reserved2; } ck_entry;
typedef struct ck_tail { uint64_t length; uint32_t crc, reserved; char magic[8]; } ck_tail;
typedef struct blob { const char *name; const void *data; size_t bytes; } blob;

/* What this trainer keeps: the data position is the step (samples step*256 ...), and the data has
 * no random state; the order and micro-batch count must match to resume with the same weights. */
enum { META_STEP, META_L, META_ORDER, META_SAMPLE, META_N };

static int write_all(int fd, const void *p, size_t n) {
  for (const char *c = p; n;) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    c += w, n -= (size_t)w;
  }
  return 0;
}

static int die_in_ckpt = -1; /* --die RANK:STEP:ckpt for this process: the step whose write it dies in */

/* One checkpoint file, atomically: DIR/.ckpt-<step>.bin.tmp.<pid>, fsync, rename to
 * DIR/ckpt-<step>.bin, fsync of DIR. Returns 0, or -1 having said why (nothing half-written is left
 * under the final name). */
static int ck_write(const char *dir, int step, const blob *b, int nb) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/ckpt-%010d.bin", dir, step);
  snprintf(tmp, sizeof tmp, "%s/.ckpt-%010d.bin.tmp.%d", dir, step, (int)getpid());
  ck_head h = {CK_MAGIC, CK_VERSION, (uint32_t)nb, (uint64_t)step, 0};
  memcpy(h.magic, CK_MAGIC, 8);
  ck_entry e[CK_MAXBLOBS];
  memset(e, 0, sizeof e);
  uint64_t off = (sizeof h + (size_t)nb * sizeof e[0] + CK_ALIGN - 1) / CK_ALIGN * CK_ALIGN;
  for (int i = 0; i < nb; i++) {
    snprintf(e[i].name, CK_NAME, "%s", b[i].name);
    e[i].offset = off;
    e[i].nbytes = b[i].bytes;
    e[i].crc = schedc_crc32c(0, b[i].data, b[i].bytes);
    off = (off + b[i].bytes + CK_ALIGN - 1) / CK_ALIGN * CK_ALIGN;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) { fprintf(stderr, "train_mlp: cannot write %s: %s\n", tmp, strerror(errno)); return -1; }
  static const char zero[CK_ALIGN];
  uint32_t crc = schedc_crc32c(0, &h, sizeof h);
  crc = schedc_crc32c(crc, e, (size_t)nb * sizeof e[0]);
  int bad = write_all(fd, &h, sizeof h) || write_all(fd, e, (size_t)nb * sizeof e[0]);
  uint64_t at = sizeof h + (size_t)nb * sizeof e[0];
  for (int i = 0; i < nb && !bad; i++) {
    size_t pad = (size_t)(e[i].offset - at);
    crc = schedc_crc32c(crc, zero, pad);
    crc = schedc_crc32c_combine(crc, e[i].crc, b[i].bytes); /* the blob's CRC, taken once */
    bad = write_all(fd, zero, pad) || write_all(fd, b[i].data, b[i].bytes / 2);
    if (!bad && i == nb - 1 && die_in_ckpt == step) raise(SIGKILL); /* --die R:S:ckpt: halfway */
    bad = bad || write_all(fd, (const char *)b[i].data + b[i].bytes / 2, b[i].bytes - b[i].bytes / 2);
    at = e[i].offset + b[i].bytes;
  }
  size_t pad = (size_t)(off - at);
  crc = schedc_crc32c(crc, zero, pad);
  ck_tail t = {off + sizeof(ck_tail), crc, 0, CK_END};
  memcpy(t.magic, CK_END, 8);
  bad = bad || write_all(fd, zero, pad) || write_all(fd, &t, sizeof t);
  bad |= fsync(fd) != 0;
  bad |= close(fd) != 0;
  if (bad || rename(tmp, path) != 0) {
    fprintf(stderr, "train_mlp: cannot write %s: %s\n", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* the rename itself made durable */
  if (dfd < 0 || fsync(dfd) != 0) {
    fprintf(stderr, "train_mlp: cannot sync the folder %s: %s\n", dir, strerror(errno));
    if (dfd >= 0) close(dfd);
    return -1;
  }
  close(dfd);
  return 0;
}

/* The checkpoints in dir, newest first: their steps into steps[cap]; returns how many. Also
 * removes temporary files left by writers that died (their pid gone). */
static int ck_list(const char *dir, int *steps, int cap) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *de; (de = readdir(d));) {
    int s, pid;
    char want[64];
    if (sscanf(de->d_name, "ckpt-%d.bin", &s) == 1 && s >= 0 && n < cap &&
        snprintf(want, sizeof want, "ckpt-%010d.bin", s) > 0 && !strcmp(want, de->d_name)) {
      steps[n++] = s;
    } else if (sscanf(de->d_name, ".ckpt-%d.bin.tmp.%d", &s, &pid) == 2 && pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) {
      char p[4200];
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      unlink(p);
    }
  }
  closedir(d);
  for (int i = 1; i < n; i++) /* newest first */
    for (int j = i; j > 0 && steps[j - 1] < steps[j]; j--) { int t = steps[j]; steps[j] = steps[j - 1]; steps[j - 1] = t; }
  return n;
}

/* Keep the newest `keep` checkpoints of dir. */
static void ck_prune(const char *dir, int keep) {
  int steps[1024], n = ck_list(dir, steps, 1024);
  for (int i = keep; i < n; i++) {
    char p[4200];
    snprintf(p, sizeof p, "%s/ckpt-%010d.bin", dir, steps[i]);
    unlink(p);
  }
}

/* Read and verify a checkpoint: every blob's CRC32C and the whole file's. Fills the blobs named
 * in want (exactly want[i].bytes each); want[nreq..nw) are optional: one the file lacks gets
 * bytes = 0. 0, or -1 with why[] saying what failed. */
static int ck_read(const char *path, int *step, blob *want, int nw, int nreq, char *why, size_t cap) {
  FILE *f = fopen(path, "rb");
  if (!f) { snprintf(why, cap, "cannot open it: %s", strerror(errno)); return -1; }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = size > 0 ? malloc((size_t)size) : NULL;
  size_t got = buf ? fread(buf, 1, (size_t)size, f) : 0;
  fclose(f);
  int rc = -1;
  ck_head h;
  ck_tail t;
  if (!buf || got != (size_t)size || (size_t)size < sizeof h + sizeof t) {
    snprintf(why, cap, "truncated: %ld bytes, less than a header and a trailer", size);
    goto out;
  }
  memcpy(&h, buf, sizeof h);
  memcpy(&t, buf + size - (long)sizeof t, sizeof t);
  if (memcmp(h.magic, CK_MAGIC, 8)) { snprintf(why, cap, "not a schedc checkpoint (no %s magic)", CK_MAGIC); goto out; }
  if (memcmp(t.magic, CK_END, 8) || t.length != (uint64_t)size) {
    snprintf(why, cap, "truncated or cut: %ld bytes and no trailer at its end (a write that did not finish)", size);
    goto out;
  }
  if (h.version != CK_VERSION) { snprintf(why, cap, "format version %u, this program reads %d", h.version, CK_VERSION); goto out; }
  if (h.nblobs > CK_MAXBLOBS || sizeof h + h.nblobs * sizeof(ck_entry) > (size_t)size - sizeof t) {
    snprintf(why, cap, "its table (%u entries) does not fit in its %ld bytes", h.nblobs, size);
    goto out;
  }
  ck_entry *e = (ck_entry *)(void *)(buf + sizeof h);
  for (uint32_t i = 0; i < h.nblobs; i++) {
    e[i].name[CK_NAME - 1] = 0;
    if (e[i].offset > (uint64_t)size - sizeof t || e[i].nbytes > (uint64_t)size - sizeof t - e[i].offset) {
      snprintf(why, cap, "tensor '%s' lies outside the file", e[i].name);
      goto out;
    }
    uint32_t c = schedc_crc32c(0, buf + e[i].offset, e[i].nbytes);
    if (c != e[i].crc) {
      snprintf(why, cap, "tensor '%s' fails its CRC32C (stored %08x, computed %08x): corrupt", e[i].name, e[i].crc, c);
      goto out;
    }
  }
  uint32_t whole = schedc_crc32c(0, buf, (size_t)size - sizeof t);
  if (whole != t.crc) {
    snprintf(why, cap, "the file fails its CRC32C (stored %08x, computed %08x): its header or table is corrupt", t.crc, whole);
    goto out;
  }
  for (int w = 0; w < nw; w++) {
    uint32_t i = 0;
    while (i < h.nblobs && strcmp(e[i].name, want[w].name)) i++;
    if (i == h.nblobs && w >= nreq) { want[w].bytes = 0; continue; }
    if (i == h.nblobs || e[i].nbytes != want[w].bytes) {
      snprintf(why, cap, "no tensor '%s' of %zu bytes: not a checkpoint of this model", want[w].name, want[w].bytes);
      goto out;
    }
    memcpy((void *)want[w].data, buf + e[i].offset, want[w].bytes);
  }
  *step = (int)h.step;
  rc = 0;
out:
  free(buf);
  return rc;
}

/* The newest good checkpoint of dir into p, v, meta (newer ones that fail are named on stderr,
 * rank 0), and with --feedback (residual != NULL) this rank's residual: blob "residual.<rank>" of
 * the "feedback" blob's count of ranks, which must be nranks (a residual is one rank's; splitting
 * or merging them would change what the next steps send). 0, or -1. */
static int ck_load(const char *dir, int rank, int nranks, float *p, float *v, int64_t *meta, float *residual) {
  int steps[1024], n = ck_list(dir, steps, 1024);
  for (int i = 0; i < n; i++) {
    char path[4200], why[300], rname[CK_NAME];
    snprintf(path, sizeof path, "%s/ckpt-%010d.bin", dir, steps[i]);
    snprintf(rname, sizeof rname, "residual.%d", rank);
    int64_t fbranks = 0;
    float scratch[NPARAM];
    blob want[5] = {{"meta", meta, META_N * sizeof(int64_t)}, {"params", p, NPARAM * sizeof(float)},
                    {"momentum", v, NPARAM * sizeof(float)}, {"feedback", &fbranks, sizeof fbranks},
                    {rname, residual ? residual : scratch, NPARAM * sizeof(float)}};
    int step;
    if (ck_read(path, &step, want, 5, 3, why, sizeof why) == 0 && meta[META_STEP] == step) {
      int has = want[3].bytes != 0;
      if (has != (residual != NULL) || (has && (fbranks != nranks || !want[4].bytes))) {
        if (rank == 0 && !has)
          fprintf(stderr, "train_mlp: %s holds no error-feedback residuals (made without --feedback); resuming with "
                  "--feedback would start them from zeros and change the weights\n", path);
        else if (rank == 0 && !residual)
          fprintf(stderr, "train_mlp: %s holds the error-feedback residuals of %lld ranks (made with --feedback); "
                  "resume with --feedback\n", path, (long long)fbranks);
        else if (rank == 0)
          fprintf(stderr, "train_mlp: %s holds the error-feedback residuals of %lld ranks; resuming on %d would lose or "
                  "invent what those ranks did not send yet (a residual is one rank's): resume on %lld ranks\n", path,
                  (long long)fbranks, nranks, (long long)fbranks);
        return -2;
      }
      if (rank == 0 && i) fprintf(stderr, "train_mlp: resuming from %s (step %d)\n", path, step);
      return 0;
    }
    if (rank == 0) fprintf(stderr, "train_mlp: refusing checkpoint %s: %s%s\n", path, why,
                           i + 1 < n ? "; trying the one before it" : "");
  }
  if (rank == 0) fprintf(stderr, "train_mlp: --resume %s: no good checkpoint there\n", dir);
  return -1;
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

enum { ORDER_ANY = 0, ORDER_CANONICAL = 1, ORDER_EXACT = 2 };
typedef struct cfg {
  int steps, L, order;
  schedc_dtype wire;
  const char *schedule;
  schedc_call_opts copts; /* --wire, --topk, --feedback (docs/compression.md); residual: this rank's */
} cfg;

/* One training step on comm: this rank's micro-batches [r*L/n, (r+1)*L/n) summed in the chosen
 * order into g, the loss summed into *tot. SCHEDC_OK, or the failed call's status. */
static schedc_status train_step(const cfg *cf, schedc_comm *comm, const schedc_plan *plan, int step, const float *p,
                                float *g, double *tot) {
  int rank = schedc_comm_rank(comm), n = schedc_comm_nranks(comm), L = cf->L;
  int first = rank * L / n, m = (rank + 1) * L / n - first;
  float gm[NPARAM];
  double loss = 0;
  schedc_status st = SCHEDC_OK;
  if (cf->order != ORDER_ANY) {
    schedc_accum *acc;
    if ((st = schedc_accum_create(NPARAM, SCHEDC_F32, cf->order == ORDER_EXACT ? SCHEDC_SUM_EXACT : SCHEDC_SUM, first,
                                  m, &acc)) != SCHEDC_OK)
      return st;
    for (int k = 0; k < m; k++) { /* micro-batches in reverse: arrival order must not matter */
      int mb = first + (m - 1 - k);
      loss += microbatch_grad(p, step, mb, L, gm);
      schedc_accumulate(acc, mb, gm);
    }
    if (cf->order == ORDER_EXACT) /* g: every leaf's sum; copts.wire: each leaf quantized */
      st = schedc_accum_allreduce_v2(acc, g, comm, NULL, &cf->copts);
    else schedc_accum_result(acc, g);
    schedc_accum_free(acc);
  } else {
    memset(g, 0, NPARAM * sizeof *g);
    for (int k = 0; k < m; k++) {
      loss += microbatch_grad(p, step, first + k, L, gm);
      for (int i = 0; i < NPARAM; i++) g[i] += gm[i];
    }
  }
  if (st != SCHEDC_OK || cf->order == ORDER_EXACT) {
    /* summed above */
  } else if (cf->wire == SCHEDC_BF16) {
    uint16_t gb[NPARAM];
    for (int i = 0; i < NPARAM; i++) { uint32_t u; memcpy(&u, &g[i], 4); u += 0x7fff + ((u >> 16) & 1); gb[i] = (uint16_t)(u >> 16); }
    st = schedc_allreduce(gb, gb, NPARAM, SCHEDC_BF16, SCHEDC_SUM, comm, NULL);
    for (int i = 0; i < NPARAM; i++) { uint32_t u = (uint32_t)gb[i] << 16; memcpy(&g[i], &u, 4); }
  } else if (cf->copts.wire || cf->copts.topk > 0) { /* compressed: a copy in, the residual kept apart from both */
    memcpy(gm, g, sizeof gm);
    st = schedc_allreduce_v2(gm, g, NPARAM, SCHEDC_F32, SCHEDC_SUM, comm, plan, &cf->copts);
  } else {
    st = schedc_allreduce(g, g, NPARAM, SCHEDC_F32, SCHEDC_SUM, comm, plan);
  }
  *tot = loss;
  if (st == SCHEDC_OK) st = schedc_allreduce(&loss, tot, 1, SCHEDC_F64, SCHEDC_SUM, comm, NULL);
  return st;
}

/* The canonical plan for n ranks (NULL for the other orders). */
static int make_plan(const cfg *cf, int n, int rank, schedc_plan **plan) {
  *plan = NULL;
  if (cf->order != ORDER_CANONICAL) return 0;
  const char *defs[] = {"shape=binomial", "order=canonical"};
  schedc_load_opts lo = SCHEDC_LOAD_OPTS_INIT;
  lo.nranks = n;
  lo.defines = defs;
  lo.ndefines = 2;
  if (schedc_plan_from_script(cf->schedule, &lo, plan) == SCHEDC_OK) return 0;
  if (rank == 0) fprintf(stderr, "train_mlp: %s\n", schedc_errmsg());
  return -1;
}

typedef struct diespec { int rank, step, ckpt; } diespec;

int main(int argc, char **argv) {
  cfg cf = {40, 0, ORDER_ANY, SCHEDC_F32, "schedules/tree.lua", SCHEDC_CALL_OPTS_INIT};
  int every = 10, keep = 3, shrink = 0, ndie = 0, feedback = 0;
  diespec die[8];
  const char *ckdir = NULL, *resume = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--feedback")) { feedback = 1; continue; }
    if (!v) { fprintf(stderr, "train_mlp: %s needs a value\n", a); return 2; }
    if (!strcmp(a, "--steps")) { if (parse_int(v, 0, 1 << 30, &cf.steps)) { fprintf(stderr, "train_mlp: --steps '%s' is not a step count from 0 to 2^30\n", v); return 2; } }
    else if (!strcmp(a, "--microbatches")) { if (parse_int(v, 1, BATCH, &cf.L)) { fprintf(stderr, "train_mlp: --microbatches '%s' is not a count from 1 to %d\n", v, BATCH); return 2; } }
    else if (!strcmp(a, "--order")) {
      if (strcmp(v, "canonical") && strcmp(v, "any") && strcmp(v, "exact")) { fprintf(stderr, "train_mlp: --order '%s' (choose canonical, exact or any)\n", v); return 2; }
      cf.order = !strcmp(v, "canonical") ? ORDER_CANONICAL : !strcmp(v, "exact") ? ORDER_EXACT : ORDER_ANY;
    }
    else if (!strcmp(a, "--schedule")) cf.schedule = v;
    else if (!strcmp(a, "--wire")) {
      schedc_wire w;
      if (schedc_wire_parse(v, &w) != SCHEDC_OK) { fprintf(stderr, "train_mlp: --wire q8 or q16\n"); return 2; }
      cf.copts.wire = (int)w;
    } else if (!strcmp(a, "--topk")) {
      char *end;
      cf.copts.topk = strtod(v, &end);
      if (*end || !(cf.copts.topk > 0 && cf.copts.topk <= 1)) { fprintf(stderr, "train_mlp: --topk '%s' is not a fraction in (0, 1]\n", v); return 2; }
    }
    else if (!strcmp(a, "--dtype")) { if (schedc_dtype_parse(v, &cf.wire) || (cf.wire != SCHEDC_F32 && cf.wire != SCHEDC_BF16)) { fprintf(stderr, "train_mlp: --dtype f32 or bf16\n"); return 2; } }
    else if (!strcmp(a, "--checkpoint")) ckdir = v;
    else if (!strcmp(a, "--every")) { if (parse_int(v, 1, 1 << 30, &every)) { fprintf(stderr, "train_mlp: --every '%s' is not a step count from 1\n", v); return 2; } }
    else if (!strcmp(a, "--keep")) { if (parse_int(v, 1, 1000, &keep)) { fprintf(stderr, "train_mlp: --keep '%s' is not a count from 1 to 1000\n", v); return 2; } }
    else if (!strcmp(a, "--resume")) resume = v;
    else if (!strcmp(a, "--on-failure")) {
      if (strcmp(v, "exit") && strcmp(v, "shrink")) { fprintf(stderr, "train_mlp: --on-failure '%s' (choose exit or shrink)\n", v); return 2; }
      shrink = !strcmp(v, "shrink");
    }
    else if (!strcmp(a, "--die")) {
      char where[8] = "";
      int r, s, got = sscanf(v, "%d:%d:%7s", &r, &s, where);
      if (ndie == 8 || got < 2 || r < 0 || s < 0 || (got == 3 && strcmp(where, "ckpt"))) { fprintf(stderr, "train_mlp: --die '%s' (RANK:STEP or RANK:STEP:ckpt, at most 8)\n", v); return 2; }
      die[ndie++] = (diespec){r, s, got == 3};
    }
    else { fprintf(stderr, "train_mlp: unknown option %s\n", a); return 2; }
    i++;
  }
  int compressed = cf.copts.wire || cf.copts.topk > 0;
  if (compressed && (cf.order == ORDER_CANONICAL || cf.wire != SCHEDC_F32 || (cf.copts.wire && cf.copts.topk > 0) ||
                     (cf.copts.topk > 0 && cf.order == ORDER_EXACT))) {
    fprintf(stderr, "train_mlp: --wire goes with --order exact or any, --topk with --order any, f32, one of them\n");
    return 2;
  }
  if (feedback && (!compressed || cf.order == ORDER_EXACT)) {
    fprintf(stderr, "train_mlp: --feedback needs --wire or --topk, and no --order exact\n");
    return 2;
  }
  if (shrink && cf.order != ORDER_EXACT) {
    fprintf(stderr, "train_mlp: --on-failure shrink needs --order exact: only exact sums give the same weights on "
            "however many ranks survive\n");
    return 2;
  }
  if (ckdir && make_dir(ckdir)) return 2; /* before training, not at the first save */
  schedc_comm *comm;
  if (schedc_comm_init_env(NULL, &comm) != SCHEDC_OK) {
    fprintf(stderr, "train_mlp: %s (start it with: schedc launch -n N -- train_mlp ...)\n", schedc_errmsg());
    return 1;
  }
  int rank = schedc_comm_rank(comm), n = schedc_comm_nranks(comm), me0 = rank; /* me0: the rank started as */
  if (!cf.L) cf.L = n;
  if (feedback && (ckdir || resume) && n > CK_MAXBLOBS - 4) { /* meta, params, momentum, feedback, a residual each */
    if (rank == 0) fprintf(stderr, "train_mlp: --feedback with --checkpoint/--resume takes at most %d ranks (a residual "
                           "blob each in one file), not %d\n", CK_MAXBLOBS - 4, n);
    schedc_comm_free(comm);
    return 2;
  }
  if (n > cf.L || (cf.order != ORDER_EXACT && cf.L % n)) {
    if (rank == 0) fprintf(stderr, "train_mlp: %d micro-batches cannot split over %d ranks (%s)\n", cf.L, n,
                           cf.order == ORDER_EXACT ? "at least one each" : "equal blocks; --order exact takes any count up to L");
    schedc_comm_free(comm);
    return 2;
  }
  for (int i = 0; i < ndie; i++)
    if (die[i].rank == me0 && die[i].ckpt) die_in_ckpt = die[i].step;
  schedc_plan *plan = NULL;
  if (make_plan(&cf, n, rank, &plan)) { schedc_comm_free(comm); return 1; }
  float p[NPARAM], v[NPARAM], g[NPARAM], residual[NPARAM] = {0};
  if (feedback) cf.copts.residual = residual; /* this rank's: what its steps did not send yet */
  for (int i = 0; i < NPARAM; i++) { p[i] = 0.3f * unit(mix(0xabcdefull + (uint64_t)i)); v[i] = 0; }
  int start = 0;
  if (resume) {
    int64_t meta[META_N];
    int lrc = ck_load(resume, rank, n, p, v, meta, feedback ? residual : NULL);
    if (lrc) { schedc_comm_free(comm); schedc_plan_free(plan); return lrc == -2 ? 2 : 1; }
    if (meta[META_L] != cf.L || meta[META_ORDER] != cf.order) {
      static const char *const names[] = {"any", "canonical", "exact"};
      if (rank == 0) fprintf(stderr, "train_mlp: the checkpoint in %s was made with %lld micro-batches and --order %s; "
                             "resuming with %d and --order %s would change the weights\n", resume, (long long)meta[META_L],
                             meta[META_ORDER] >= 0 && meta[META_ORDER] <= 2 ? names[meta[META_ORDER]] : "?", cf.L,
                             names[cf.order]);
      schedc_comm_free(comm); schedc_plan_free(plan); return 2;
    }
    start = (int)meta[META_STEP];
  }
  /* The state at the start of the last two steps: a rank may finish a step that another rank's
   * call failed in, so after a shrink the survivors go back to the earliest unfinished step. */
  float snap_p[2][NPARAM], snap_v[2][NPARAM];
  const float lr = 0.05f, mu = 0.9f;
  for (int step = start; step < cf.steps;) {
    for (int i = 0; i < ndie; i++)
      if (die[i].rank == me0 && !die[i].ckpt && die[i].step == step) raise(SIGKILL); /* --die R:S */
    memcpy(snap_p[step & 1], p, sizeof p);
    memcpy(snap_v[step & 1], v, sizeof v);
    double tot = 0;
    schedc_status st = train_step(&cf, comm, plan, step, p, g, &tot);
    if (st != SCHEDC_OK && shrink && (st == SCHEDC_EPEER || st == SCHEDC_ETIMEOUT)) {
      fprintf(stderr, "train_mlp: rank %d: %s; shrinking\n", rank, schedc_errmsg());
      schedc_comm *nc;
      if (schedc_comm_shrink(comm, NULL, &nc) != SCHEDC_OK) {
        fprintf(stderr, "train_mlp: rank %d: %s\n", rank, schedc_errmsg());
        return 1;
      }
      schedc_comm_free(comm);
      comm = nc;
      rank = schedc_comm_rank(comm), n = schedc_comm_nranks(comm);
      schedc_plan_free(plan);
      if (make_plan(&cf, n, rank, &plan)) return 1;
      int64_t mine = step, lo = step;
      if (schedc_allreduce(&mine, &lo, 1, SCHEDC_I64, SCHEDC_MIN, comm, NULL) != SCHEDC_OK || lo < step - 1) {
        fprintf(stderr, "train_mlp: rank %d: cannot agree on the step to go on from: %s\n", rank, schedc_errmsg());
        return 1;
      }
      if (rank == 0) fprintf(stderr, "train_mlp: %d ranks go on from step %lld\n", n, (long long)lo);
      step = (int)lo;
      memcpy(p, snap_p[step & 1], sizeof p); /* the state at the start of that step */
      memcpy(v, snap_v[step & 1], sizeof v);
      continue;
    }
    if (st != SCHEDC_OK) { fprintf(stderr, "train_mlp: rank %d: %s\n", rank, schedc_errmsg()); return 1; }
    for (int i = 0; i < NPARAM; i++) {
      v[i] = mu * v[i] + g[i] / (float)BATCH;
      p[i] = p[i] - lr * v[i];
    }
    step++;
    if (rank == 0 && (step % 5 == 0 || step == cf.steps)) printf("step %3d  loss %.5f\n", step, tot / BATCH);
    if (ckdir && (step % every == 0 || step == cf.steps)) {
      /* --feedback: every rank's residual to rank 0 (an allgather: the ranks' steps are in step) */
      float *all = NULL;
      if (feedback && (!(all = malloc((size_t)n * sizeof residual)) ||
                       schedc_allgather(residual, all, NPARAM, SCHEDC_F32, comm, NULL) != SCHEDC_OK)) {
        fprintf(stderr, "train_mlp: rank %d: cannot gather the residuals: %s\n", rank, all ? schedc_errmsg() : "out of memory");
        return 1;
      }
      int64_t meta[META_N] = {step, cf.L, cf.order, (int64_t)step * BATCH}, fbranks = n;
      blob b[CK_MAXBLOBS] = {{"meta", meta, sizeof meta}, {"params", p, sizeof p}, {"momentum", v, sizeof v}};
      char names[CK_MAXBLOBS][CK_NAME];
      int nb = 3;
      if (feedback) {
        b[nb++] = (blob){"feedback", &fbranks, sizeof fbranks};
        for (int r = 0; r < n; r++) {
          snprintf(names[r], CK_NAME, "residual.%d", r);
          b[nb++] = (blob){names[r], all + (size_t)r * NPARAM, sizeof residual};
        }
      }
      int bad = rank == 0 && ck_write(ckdir, step, b, nb);
      free(all);
      if (bad) return 1;
      if (rank == 0) ck_prune(ckdir, keep);
    }
  }
  int ok = 0;
  schedc_replicas_agree(comm, p, sizeof p, &ok);
  if (rank == 0) {
    printf("replicas agree: %s\n", ok ? "yes" : "NO");
    printf("weights digest: %016llx\n", (unsigned long long)schedc_digest(p, sizeof p));
  }
  schedc_plan_free(plan);
  schedc_comm_free(comm);
  return ok ? 0 : 1;
}
