/*
 * fuzz_dsl.c — libFuzzer target for the schedule loader: the bytes run as a schedule script in
 * the sandbox (schedc_plan_from_script: Lua, the builtins, verification, lowering) with small
 * limits (2e6 instructions, 64 MiB, 2 s), for 4 ranks. Every input must end in SCHEDC_OK or a
 * clean error with a message, within the limits — a crash, leak, sanitizer report or a run past
 * libFuzzer's -timeout is a finding. Seeds: the shipped schedules, tests/dsl, tests/fails.
 */
#define _GNU_SOURCE /* memfd_create */
#include "fuzz_input.h"
#include "schedc/schedc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  int fd = sc_fuzz_file(data, size, path, sizeof path);
  schedc_load_opts o = SCHEDC_LOAD_OPTS_INIT;
  o.nranks = 4;
  o.max_instructions = 2000000;
  o.max_memory = 64u << 20;
  o.max_seconds = 2.0;
  schedc_plan *plan = NULL;
  schedc_status st = schedc_plan_from_script(path, &o, &plan); /* before plan is read */
  sc_fuzz_plan_result(st, plan);
  close(fd);
  return 0;
}
