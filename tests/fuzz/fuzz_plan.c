/*
 * fuzz_plan.c — libFuzzer target for the plan-file loader (schedc_plan_load: header, sizes,
 * content hash, body, then verification and lowering). Each input is loaded as given and, when it
 * carries the plan magic, again "sealed": its payload length and content hash made right, so the
 * mutations reach the body parser and the verifier instead of stopping at the hash. Every input
 * must end in SCHEDC_OK or a clean error with a message — a crash, leak, sanitizer report or hang
 * is a finding. Seeds: tests/fuzz/corpus/plan (plans written by `schedc compile`).
 */
#define _GNU_SOURCE /* memfd_create */
#include <string.h>

#include "fuzz_input.h"
#include "ir.h"
#include "planio.h"
#include "schedc/schedc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void load(const uint8_t *data, size_t size) {
  char path[64];
  int fd = sc_fuzz_file(data, size, path, sizeof path);
  schedc_plan *plan = NULL;
  schedc_status st = schedc_plan_load(path, &plan); /* before plan is read */
  sc_fuzz_plan_result(st, plan);
  close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load(data, size);
  if (size >= 32 && !memcmp(data, SC_PLAN_MAGIC, 8)) {
    uint8_t *sealed = malloc(size);
    if (!sealed) return 0;
    memcpy(sealed, data, size);
    uint64_t plen = size - 32; /* header 24 bytes, hash 8 */
    for (int i = 0; i < 8; i++) sealed[16 + i] = (uint8_t)(plen >> (8 * i));
    uint64_t h = sc_fnv(SC_FNV_INIT, sealed, size - 8);
    for (int i = 0; i < 8; i++) sealed[size - 8 + i] = (uint8_t)(h >> (8 * i));
    load(sealed, size);
    free(sealed);
  }
  return 0;
}
