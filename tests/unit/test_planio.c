/*
 * test_planio.c — plan files: round trip through the public API, and strict refusal of a
 * flipped byte, a truncated file, an unknown version and a non-plan file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../check.h"
#include "schedc/schedc.h"

static long fsize(const char *p) {
  FILE *f = fopen(p, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

static void patch(const char *p, long off, unsigned char xorv) {
  FILE *f = fopen(p, "r+b");
  fseek(f, off, SEEK_SET);
  int c = fgetc(f);
  fseek(f, off, SEEK_SET);
  fputc(c ^ xorv, f);
  fclose(f);
}

static void copyfile(const char *from, const char *to, long n) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  for (long i = 0; i < n; i++) fputc(fgetc(a), b);
  fclose(a);
  fclose(b);
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: test_planio SCHEDULES_DIR\n"); return 2; }
  char path[4096], plan[256], bad[256];
  snprintf(path, sizeof path, "%s/ring.lua", argv[1]);
  snprintf(plan, sizeof plan, "/tmp/schedc_test_%d.plan", (int)getpid());
  snprintf(bad, sizeof bad, "/tmp/schedc_test_%d.bad", (int)getpid());
  schedc_load_opts o = SCHEDC_LOAD_OPTS_INIT;
  o.nranks = 6;
  schedc_plan *p = NULL, *q = NULL;
  CHECK(schedc_plan_from_script(path, &o, &p) == SCHEDC_OK);
  CHECK(schedc_plan_save(p, plan) == SCHEDC_OK);
  CHECK(schedc_plan_load(plan, &q) == SCHEDC_OK);
  schedc_plan_info a = SCHEDC_PLAN_INFO_INIT, b = SCHEDC_PLAN_INFO_INIT;
  schedc_plan_get_info(p, &a);
  schedc_plan_get_info(q, &b);
  CHECK(a.hash == b.hash && a.ntransfers == b.ntransfers && a.nsteps == b.nsteps && b.nranks == 6);
  char t1[128], t2[128];
  for (int c = 0; c < 6; c++) {
    schedc_plan_order(p, c, 3, t1, sizeof t1);
    schedc_plan_order(q, c, 3, t2, sizeof t2);
    CHECK_EQ_STR(t2, t1);
  }
  schedc_transfer x;
  CHECK(schedc_plan_transfer(q, 0, &x) == SCHEDC_OK && x.line > 0);
  CHECK_CONTAINS(x.file, "ring.lua");
  /* plan_open dispatches on the magic and checks --ranks against the plan */
  schedc_plan *r = NULL;
  CHECK(schedc_plan_open(plan, NULL, &r) == SCHEDC_OK);
  schedc_plan_free(r);
  o.nranks = 5;
  CHECK(schedc_plan_open(plan, &o, &r) == SCHEDC_EINVAL && r == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "6 ranks");

  long n = fsize(plan);
  /* every single flipped byte is refused (payload: hash; header: magic/version/length) */
  int refused = 0, tried = 0;
  for (long off = 0; off < n; off += (n / 97) + 1) {
    copyfile(plan, bad, n);
    patch(bad, off, 0x10);
    tried++;
    if (schedc_plan_load(bad, &r) != SCHEDC_OK && r == NULL) refused++;
    else schedc_plan_free(r);
  }
  CHECK(refused == tried);
  copyfile(plan, bad, n - 5);
  CHECK(schedc_plan_load(bad, &r) == SCHEDC_EPLAN);
  CHECK_CONTAINS(schedc_errmsg(), "truncated");
  copyfile(plan, bad, n);
  patch(bad, 8, 0x07); /* version 1 -> 6 */
  CHECK(schedc_plan_load(bad, &r) == SCHEDC_EVERSION);
  CHECK_CONTAINS(schedc_errmsg(), "version 6 is not supported");
  copyfile(plan, bad, n);
  patch(bad, 40, 0x01);
  CHECK(schedc_plan_load(bad, &r) == SCHEDC_EPLAN);
  CHECK_CONTAINS(schedc_errmsg(), "corrupted");
  CHECK(schedc_plan_load(path, &r) == SCHEDC_EPLAN); /* a script is not a plan */
  CHECK_CONTAINS(schedc_errmsg(), "not a schedc plan file");
  CHECK(schedc_plan_load("/nonexistent/x.plan", &r) == SCHEDC_EIO);
  schedc_plan_free(NULL);
  schedc_plan_free(p);
  schedc_plan_free(q);
  remove(plan);
  remove(bad);
  return DONE();
}
