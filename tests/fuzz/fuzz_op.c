/*
 * fuzz_op.c — libFuzzer target for the custom-operator checker (ops/opcheck.c through libclang):
 * the bytes are an operator file, the function checked is the one its `// op: NAME` line names
 * (else its `check-op FILE.c:NAME` line's, else `op`). Only the check runs — no commutativity test, no C compiler — so each input costs
 * one libclang parse. Every input must end in SCHEDC_OK with both sources, or a clean error with
 * a message. Seeds: ops/shipped, tests/ops, tests/fails_ops.
 * Without libclang the target exits at its first input saying so.
 */
#define _GNU_SOURCE /* memfd_create */
#include <string.h>

#include "fuzz_input.h"
#include "ops.h"
#include "schedc/schedc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ident(uint8_t c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The operator's name: after "// op: " (the tests' op files), else after the ".c:" of a
 * "check-op FILE.c:NAME" line (the shipped ones' headers), else "op". */
static void op_name(const uint8_t *data, size_t size, char *name, size_t cap) {
  snprintf(name, cap, "op");
  const char *keys[] = {"// op: ", ".c:"};
  for (int q = 0; q < 2; q++) {
    size_t kl = strlen(keys[q]);
    for (size_t i = 0; i + kl < size; i++) {
      if (memcmp(data + i, keys[q], kl)) continue;
      size_t j = i + kl, k = 0;
      while (j < size && k + 1 < cap && ident(data[j])) name[k++] = (char)data[j++];
      if (!k) continue;
      name[k] = 0;
      return;
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64], name[64];
  op_name(data, size, name, sizeof name);
  int fd = sc_fuzz_file(data, size, path, sizeof path);
  sc_opsrc src;
  memset(&src, 0, sizeof src);
  schedc_status st = sc_ops_check(path, name, &src);
  if (st == SCHEDC_EUNAVAIL) {
    /* no libclang: nothing to fuzz; run_fuzz.sh reads this line and skips (or fails under
     * SCHEDC_REQUIRE_TOOLS), whatever status libFuzzer gives an exit from the target */
    fprintf(stderr, "[SKIP] %s\n", schedc_errmsg());
    exit(77);
  }
  if (st == SCHEDC_OK) {
    if (!src.cpu || !src.cuda) abort();
    sc_opsrc_free(&src);
  } else if (!*schedc_errmsg()) {
    abort();
  }
  close(fd);
  return 0;
}
