/*
 * test_fuzz.c — feeds random junk to the schedule loader: random bytes, token soup built from
 * the DSL's vocabulary, and random mutations of the shipped schedules. Every input must give
 * SCHEDC_OK or a clean failure status with a message — never a crash, hang or leak (run under
 * ASan/UBSan in CI). Deterministic: a fixed seed, so a failure can be replayed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static const char *const toks[] = {
    "local", "s", "=", "schedule", "{", "}", "(", ")", ",", "chunks", "collective", "\"allreduce\"",
    "\"reduce_scatter\"", "\"broadcast\"", "root", "order", "\"canonical\"", "s:step()", "s:reduce(", "s:copy(",
    "st:reduce(", "local st = s:step()", "nranks", "0", "1", "2", "-1", "1e9", "0.5", "for i = 0, nranks - 1 do",
    "end", "if", "then", "else", "while true do", "return s", "return", "topo.node_of(", "topo.ranks_on(0)",
    "params.k", "..", "#", "[", "]", "function", "repeat", "until", "string.rep(\"x\", 1e6)", "error(", "nil",
    "{}", "\n", ";", "s.step", "math.huge", "%", "~", "//", "goto x", "::x::", "st", "i", "true", "false"};

static char *read_file(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  if (b && fread(b, 1, (size_t)len, f) != (size_t)len) { free(b); b = NULL; }
  fclose(f);
  if (b) { b[len] = 0; *n = (size_t)len; }
  return b;
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_fuzz SCHEDULES_DIR [iterations]\n"); return 2; }
  int iters = argc > 2 ? atoi(argv[2]) : 600;
  const char *names[] = {"ring", "tree", "direct", "halving_doubling", "hierarchical"};
  char *src[5];
  size_t srclen[5];
  for (int i = 0; i < 5; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s.lua", argv[1], names[i]);
    src[i] = read_file(p, &srclen[i]);
    CHECK(src[i] != NULL);
    if (!src[i]) return DONE();
  }
  char path[256];
  snprintf(path, sizeof path, "/tmp/schedc_fuzz_%d.lua", (int)getpid());
  int counts[SCHEDC_STATUS_COUNT_] = {0}, bad_status = 0, empty_msg = 0;
  size_t cap = 1 << 16;
  char *buf = malloc(cap);
  for (int it = 0; it < iters; it++) {
    size_t len = 0;
    int kind = it % 4;
    if (kind == 0) {             /* random bytes, sometimes with a valid prefix */
      len = rnd() % 400;
      for (size_t i = 0; i < len; i++) buf[i] = (char)(rnd() & 0xff);
    } else if (kind == 1) {      /* token soup */
      int nt = 1 + (int)(rnd() % 60);
      for (int i = 0; i < nt; i++) {
        const char *t = toks[rnd() % (sizeof toks / sizeof toks[0])];
        size_t tl = strlen(t);
        if (len + tl + 2 >= cap) break;
        memcpy(buf + len, t, tl);
        len += tl;
        buf[len++] = ' ';
      }
    } else if (kind == 3) {      /* well-formed random transfers: exercises the verifier */
      static const char *const colls[] = {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce"};
      len = (size_t)snprintf(buf, cap, "local s = schedule{ collective = '%s', chunks = nranks }\n",
                             colls[rnd() % 5]);
      int nx = (int)(rnd() % 40);
      for (int i = 0; i < nx && len + 80 < cap; i++) {
        if (rnd() % 5 == 0) len += (size_t)snprintf(buf + len, cap - len, "s:step()\n");
        len += (size_t)snprintf(buf + len, cap - len, "s:%s(%u %% nranks, (%u %% (nranks - 1) + 1 + %u) %% nranks, %u %% nranks)\n",
                                rnd() % 2 ? "reduce" : "copy", rnd() % 16, rnd() % 16, rnd() % 16, rnd() % 16);
      }
      len += (size_t)snprintf(buf + len, cap - len, "return s\n");
    } else {                     /* mutated shipped schedule */
      int s = (int)(rnd() % 5);
      memcpy(buf, src[s], srclen[s]);
      len = srclen[s];
      int muts = 1 + (int)(rnd() % 4);
      for (int m = 0; m < muts && len > 2; m++) {
        size_t at = rnd() % len, span = 1 + rnd() % 12;
        if (at + span > len) span = len - at;
        switch (rnd() % 3) {
        case 0: memmove(buf + at, buf + at + span, len - at - span); len -= span; break;  /* delete */
        case 1: for (size_t i = 0; i < span; i++) buf[at + i] = (char)(32 + rnd() % 95); break; /* replace */
        default:
          if (len + span < cap) { memmove(buf + at + span, buf + at, len - at); len += span; } /* duplicate */
        }
      }
    }
    FILE *f = fopen(path, "wb");
    fwrite(buf, 1, len, f);
    fclose(f);
    schedc_load_opts o = SCHEDC_LOAD_OPTS_INIT;
    o.nranks = 1 + (int)(rnd() % 9);
    o.max_instructions = 20000000;
    o.max_memory = 64u << 20;
    schedc_plan *p = NULL;
    schedc_status st = schedc_plan_from_script(path, &o, &p);
    if (st < 0 || st >= SCHEDC_STATUS_COUNT_) { bad_status++; continue; }
    counts[st]++;
    if (st == SCHEDC_OK) {
      CHECK(p != NULL);
      schedc_plan_free(p);
    } else {
      CHECK(p == NULL);
      if (st != SCHEDC_ESCRIPT && st != SCHEDC_EVERIFY) bad_status++;
      if (!schedc_errmsg()[0]) empty_msg++;
    }
  }
  remove(path);
  free(buf);
  for (int i = 0; i < 5; i++) free(src[i]);
  CHECK(bad_status == 0);
  CHECK(empty_msg == 0);
  CHECK(counts[SCHEDC_ESCRIPT] > 0); /* the generator does reach the failure paths */
  CHECK(counts[SCHEDC_EVERIFY] > 0);
  printf("fuzz: %d inputs: %d ok, %d script errors, %d rejected by the verifier\n", iters, counts[SCHEDC_OK],
         counts[SCHEDC_ESCRIPT], counts[SCHEDC_EVERIFY]);
  return DONE();
}
