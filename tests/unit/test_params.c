/*
 * test_params.c — the parameter list (common/params.h): each type's parser takes good values and
 * refuses every malformed kind with the variable, the value and the legal values named; the
 * readers (communicator init, schedc_param_get) refuse them too; docs/env.md's table is the
 * list's (`test_params --markdown` prints it; `test_params docs/env.md` compares).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "err.h"
#include "fileio.h"
#include "params.h"

/* p's value v is refused (EINVAL) with a message that names p and v and contains `says`. */
#define REFUSED(call, p, v, says)                                                             \
  do {                                                                                       \
    sc_err_clear();                                                                          \
    CHECK((call) == SCHEDC_EINVAL);                                                          \
    char head_[256];                                                                         \
    snprintf(head_, sizeof head_, "%s='%s'", sc_params[p].name, v);                          \
    CHECK_CONTAINS(schedc_errmsg(), head_);                                                  \
    CHECK_CONTAINS(schedc_errmsg(), says);                                                   \
  } while (0)

static void ints(void) {
  const sc_param p = SC_P_SCHEDC_CUDA_NODES;
  long long x = -7;
  CHECK(sc_param_parse_int(p, "1", &x) == SCHEDC_OK && x == 1);
  CHECK(sc_param_parse_int(p, "64", &x) == SCHEDC_OK && x == 64);
  CHECK(sc_param_parse_int(p, "+2", &x) == SCHEDC_OK && x == 2); /* strtol's spelling, as before */
  CHECK(sc_param_parse_int(SC_P_SCHEDC_RANK, "0", &x) == SCHEDC_OK && x == 0);
  CHECK(sc_param_parse_int(SC_P_SCHEDC_NRANKS, "65536", &x) == SCHEDC_OK && x == 65536);
  x = -7;
  const char *range[] = {"0", "65", "-1", "99999999999999999999", "-99999999999999999999"};
  for (size_t i = 0; i < sizeof range / sizeof range[0]; i++)
    REFUSED(sc_param_parse_int(p, range[i], &x), p, range[i], "': a node count from 1 to 64");
  const char *syntax[] = {"", "x", "2x", "2 ", " 2", "2.0", "0x2", "1e1", "+", "-", "nan", "2\n"};
  for (size_t i = 0; i < sizeof syntax / sizeof syntax[0]; i++)
    REFUSED(sc_param_parse_int(p, syntax[i], &x), p, syntax[i], "' is not an integer (a node count from 1 to 64)");
  CHECK(x == -7); /* untouched by a refusal */
  CHECK(sc_param_parse_int(SC_P_SCHEDC_SLICE, "4096", &x) == SCHEDC_EINTERNAL); /* a size, not an int */
}

static void sizes(void) {
  const sc_param p = SC_P_SCHEDC_SLICE;
  size_t z = 7;
  CHECK(sc_param_parse_size(p, "4096", &z) == SCHEDC_OK && z == 4096);
  CHECK(sc_param_parse_size(p, "262144", &z) == SCHEDC_OK && z == 262144);
  CHECK(sc_param_parse_size(p, "1073741824", &z) == SCHEDC_OK && z == 1u << 30);
  z = 7;
  sc_err_clear();
  CHECK(sc_param_parse_size(p, "64K", &z) == SCHEDC_EINVAL);
  CHECK_EQ_STR(schedc_errmsg(), "SCHEDC_SLICE='64K': expected a whole number of bytes in [4096, 2^30]");
  const char *bad[] = {"", "4095", "1073741825", "0", "-4096", "+4096", " 4096", "4096 ", "1e6", "262144.0",
                       "18446744073709551616", "99999999999999999999999", "nan", "inf", "0x1000"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    REFUSED(sc_param_parse_size(p, bad[i], &z), p, bad[i], "': expected a whole number of bytes in [4096, 2^30]");
  CHECK(z == 7);
}

static void doubles(void) {
  const sc_param p = SC_P_SCHEDC_TIMEOUT;
  double d = -7;
  CHECK(sc_param_parse_double(p, "300", &d) == SCHEDC_OK && d == 300);
  CHECK(sc_param_parse_double(p, "0.25", &d) == SCHEDC_OK && d == 0.25);
  CHECK(sc_param_parse_double(p, "1e3", &d) == SCHEDC_OK && d == 1000);
  d = -7;
  sc_err_clear();
  CHECK(sc_param_parse_double(p, "nan", &d) == SCHEDC_EINVAL);
  CHECK_EQ_STR(schedc_errmsg(), "SCHEDC_TIMEOUT='nan': expected seconds, a finite number > 0");
  const char *bad[] = {"", "NAN", "-nan", "inf", "-inf", "infinity", "0", "-0", "-1", "1e400", "1e-400", "5s",
                       " 5", "5 ", "5,0", "x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    REFUSED(sc_param_parse_double(p, bad[i], &d), p, bad[i], "': expected seconds, a finite number > 0");
  CHECK(d == -7);
}

static void enums(void) {
  int w = -7;
  CHECK(sc_param_parse_enum(SC_P_SCHEDC_REPAIR, "0", &w) == SCHEDC_OK && w == 0);
  CHECK(sc_param_parse_enum(SC_P_SCHEDC_REPAIR, "1", &w) == SCHEDC_OK && w == 1);
  /* the readers map words by their index: the order is part of the list */
  const char *verify[] = {"none", "digest", "checksum", "full"};
  for (int i = 0; i < 4; i++) CHECK(sc_param_parse_enum(SC_P_SCHEDC_VERIFY, verify[i], &w) == SCHEDC_OK && w == i);
  const char *backend[] = {"shm", "mpi", "cuda"};
  for (int i = 0; i < 3; i++) CHECK(sc_param_parse_enum(SC_P_SCHEDC_BACKEND, backend[i], &w) == SCHEDC_OK && w == i);
  CHECK(sc_param_parse_enum(SC_P_SCHEDC_CUDA_NET, "ipc", &w) == SCHEDC_OK && w == 0);
  CHECK(sc_param_parse_enum(SC_P_SCHEDC_CUDA_NET, "nccl", &w) == SCHEDC_OK && w == 1);
  w = -7;
  sc_err_clear();
  CHECK(sc_param_parse_enum(SC_P_SCHEDC_REPAIR, "yes", &w) == SCHEDC_EINVAL);
  CHECK_EQ_STR(schedc_errmsg(), "SCHEDC_REPAIR='yes': choose 0 or 1");
  const char *repair[] = {"", "true", "2", "01", "1 ", " 1", "0|1"};
  for (size_t i = 0; i < sizeof repair / sizeof repair[0]; i++)
    REFUSED(sc_param_parse_enum(SC_P_SCHEDC_REPAIR, repair[i], &w), SC_P_SCHEDC_REPAIR, repair[i], "': choose 0 or 1");
  REFUSED(sc_param_parse_enum(SC_P_SCHEDC_VERIFY, "crc", &w), SC_P_SCHEDC_VERIFY, "crc",
          "': choose none, digest, checksum, full or exact");
  REFUSED(sc_param_parse_enum(SC_P_SCHEDC_BACKEND, "threads", &w), SC_P_SCHEDC_BACKEND, "threads",
          "': choose shm, mpi, cuda or net");
  const char *net[] = {"tcp", "IPC", "ipc ", "ipc (peers", "nccl (payloads between nodes through NCCL send/recv)"};
  for (size_t i = 0; i < sizeof net / sizeof net[0]; i++)
    REFUSED(sc_param_parse_enum(SC_P_SCHEDC_CUDA_NET, net[i], &w), SC_P_SCHEDC_CUDA_NET, net[i],
            "': ipc (peers map each other's device memory: one host) or nccl (payloads between nodes through NCCL "
            "send/recv)");
  CHECK(w == -7);
}

/* The readers: unset and empty give the list's default (or leave the caller's), set values are
 * parsed, malformed ones refused with *out untouched. */
static void readers(void) {
  double d = 0;
  size_t z = 0;
  long long x = 99;
  int w = 99;
  unsetenv("SCHEDC_TIMEOUT");
  CHECK(sc_param_double(SC_P_SCHEDC_TIMEOUT, &d) == SCHEDC_OK && d == 300);
  setenv("SCHEDC_TIMEOUT", "", 1);
  CHECK(sc_param_raw(SC_P_SCHEDC_TIMEOUT) == NULL);
  CHECK(sc_param_double(SC_P_SCHEDC_TIMEOUT, &d) == SCHEDC_OK && d == 300);
  setenv("SCHEDC_TIMEOUT", "2.5", 1);
  CHECK(sc_param_double(SC_P_SCHEDC_TIMEOUT, &d) == SCHEDC_OK && d == 2.5);
  setenv("SCHEDC_TIMEOUT", "-3", 1);
  REFUSED(sc_param_double(SC_P_SCHEDC_TIMEOUT, &d), SC_P_SCHEDC_TIMEOUT, "-3", "a finite number > 0");
  CHECK(d == 2.5);
  unsetenv("SCHEDC_TIMEOUT");
  unsetenv("SCHEDC_SLICE");
  CHECK(sc_param_size(SC_P_SCHEDC_SLICE, &z) == SCHEDC_OK && z == 262144);
  unsetenv("SCHEDC_CUDA_BLOCKS"); /* no default in the list: the caller's stands */
  CHECK(sc_param_int(SC_P_SCHEDC_CUDA_BLOCKS, &x) == SCHEDC_OK && x == 99);
  setenv("SCHEDC_CUDA_BLOCKS", "0", 1); /* once clamped to 1 */
  REFUSED(sc_param_int(SC_P_SCHEDC_CUDA_BLOCKS, &x), SC_P_SCHEDC_CUDA_BLOCKS, "0", "a block count from 1 to 1024");
  CHECK(x == 99);
  unsetenv("SCHEDC_CUDA_BLOCKS");
  unsetenv("SCHEDC_CUDA_NET");
  CHECK(sc_param_enum(SC_P_SCHEDC_CUDA_NET, &w) == SCHEDC_OK && w == 99);
  unsetenv("SCHEDC_VERIFY");
  CHECK(sc_param_enum(SC_P_SCHEDC_VERIFY, &w) == SCHEDC_OK && w == 0);
  unsetenv("SCHEDC_LIBCUDA");
  CHECK_EQ_STR(sc_param_str(SC_P_SCHEDC_LIBCUDA), "libcuda.so.1");
  setenv("SCHEDC_LIBCUDA", "/x/libcuda.so", 1);
  CHECK_EQ_STR(sc_param_str(SC_P_SCHEDC_LIBCUDA), "/x/libcuda.so");
  unsetenv("SCHEDC_LIBCUDA");
  unsetenv("SCHEDC_HOST_ID");
  CHECK(sc_param_str(SC_P_SCHEDC_HOST_ID) == NULL);

  /* the public reader: names checked, values checked, defaults given */
  const char *v = "x";
  CHECK(schedc_param_get("SCHEDC_NO_SUCH", &v) == SCHEDC_EINVAL && v == NULL);
  CHECK_CONTAINS(schedc_errmsg(), "'SCHEDC_NO_SUCH' is not a schedc parameter");
  CHECK(schedc_param_get(NULL, &v) == SCHEDC_EINVAL);
  CHECK(schedc_param_get("SCHEDC_TIMEOUT", NULL) == SCHEDC_EINVAL);
  unsetenv("SCHEDC_CUDA_NODES");
  CHECK(schedc_param_get("SCHEDC_CUDA_NODES", &v) == SCHEDC_OK && v && !strcmp(v, "1"));
  setenv("SCHEDC_CUDA_NODES", "3", 1);
  CHECK(schedc_param_get("SCHEDC_CUDA_NODES", &v) == SCHEDC_OK && v && !strcmp(v, "3"));
  setenv("SCHEDC_CUDA_NODES", "3k", 1);
  REFUSED(schedc_param_get("SCHEDC_CUDA_NODES", &v), SC_P_SCHEDC_CUDA_NODES, "3k", "is not an integer");
  CHECK(v == NULL);
  unsetenv("SCHEDC_CUDA_NODES");
  setenv("SCHEDC_TUNING", "/some/file", 1);
  CHECK(schedc_param_get("SCHEDC_TUNING", &v) == SCHEDC_OK && v && !strcmp(v, "/some/file"));
  unsetenv("SCHEDC_TUNING");
  CHECK(schedc_param_get("SCHEDC_TUNING", &v) == SCHEDC_OK && v == NULL);
}

/* The call sites: a malformed value fails the init that reads it, with the message; a valid
 * one (or an option that overrides the variable) does not. */
static void call_sites(void) {
  schedc_comm *c[2] = {0};
  struct { const char *var, *val, *says; } bad[] = {
      {"SCHEDC_TIMEOUT", "nan", "SCHEDC_TIMEOUT='nan': expected seconds, a finite number > 0"},
      {"SCHEDC_SLICE", "64K", "SCHEDC_SLICE='64K': expected a whole number of bytes in [4096, 2^30]"},
      {"SCHEDC_VERIFY", "crc", "SCHEDC_VERIFY='crc': choose none, digest, checksum, full or exact"},
      {"SCHEDC_REPAIR", "yes", "SCHEDC_REPAIR='yes': choose 0 or 1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv(bad[i].var, bad[i].val, 1);
    CHECK(schedc_comm_init_threads(2, NULL, c) == SCHEDC_EINVAL);
    CHECK_EQ_STR(schedc_errmsg(), bad[i].says);
    CHECK(!c[0] && !c[1]);
    unsetenv(bad[i].var);
  }
  setenv("SCHEDC_TIMEOUT", "nan", 1); /* read only where the options leave it */
  setenv("SCHEDC_REPAIR", "yes", 1);
  schedc_comm_opts o = SCHEDC_COMM_OPTS_INIT;
  o.timeout_s = 5;
  o.repair = 1;
  CHECK(schedc_comm_init_threads(2, &o, c) == SCHEDC_OK);
  for (int r = 0; r < 2; r++) schedc_comm_free(c[r]);
  unsetenv("SCHEDC_TIMEOUT");
  unsetenv("SCHEDC_REPAIR");
  setenv("SCHEDC_TIMEOUT", "7.5", 1);
  setenv("SCHEDC_SLICE", "65536", 1);
  setenv("SCHEDC_VERIFY", "digest", 1);
  setenv("SCHEDC_REPAIR", "1", 1);
  CHECK(schedc_comm_init_threads(2, NULL, c) == SCHEDC_OK);
  for (int r = 0; r < 2; r++) schedc_comm_free(c[r]);
  unsetenv("SCHEDC_TIMEOUT");
  unsetenv("SCHEDC_SLICE");
  unsetenv("SCHEDC_VERIFY");
  unsetenv("SCHEDC_REPAIR");

  /* schedc_comm_init_env: the rank pair read is the one named */
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("SCHEDC_BACKEND");
  schedc_comm *e = NULL;
  setenv("SCHEDC_RANK", "x", 1);
  setenv("SCHEDC_NRANKS", "1", 1);
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_EINVAL && !e);
  CHECK_EQ_STR(schedc_errmsg(), "SCHEDC_RANK='x' is not an integer (a rank from 0 to 65535)");
  setenv("SCHEDC_RANK", "0", 1);
  setenv("SCHEDC_NRANKS", "0", 1);
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_EINVAL && !e);
  CHECK_EQ_STR(schedc_errmsg(), "SCHEDC_NRANKS='0': a rank count from 1 to 65536");
  setenv("SCHEDC_NRANKS", "1", 1);
  setenv("SCHEDC_BACKEND", "threads", 1);
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_EINVAL && !e);
  CHECK_EQ_STR(schedc_errmsg(), "SCHEDC_BACKEND='threads': choose shm, mpi, cuda or net");
  unsetenv("SCHEDC_BACKEND");
  char job[64];
  snprintf(job, sizeof job, "params%d", (int)getpid());
  setenv("SCHEDC_JOB", job, 1);
  CHECK(schedc_comm_init_env(NULL, &e) == SCHEDC_OK && e && schedc_comm_nranks(e) == 1);
  schedc_comm_free(e);
  unsetenv("SCHEDC_RANK");
  unsetenv("SCHEDC_NRANKS");
  unsetenv("SCHEDC_JOB");
}

/* Every entry: a unique name, a legal-values phrase, a default its own parser takes. */
static void the_list(void) {
  for (int i = 0; i < SC_P_COUNT_; i++) {
    const sc_param_def *d = &sc_params[i];
    char legal[512];
    sc_param_legal((sc_param)i, legal, sizeof legal);
    CHECK(d->name && *d->name && d->doc && *d->doc && *legal);
    for (int j = 0; j < i; j++) CHECK(strcmp(d->name, sc_params[j].name) != 0);
    CHECK((d->scope == SC_PS_EXT) == (strncmp(d->name, "SCHEDC_", 7) != 0)); /* ours are SCHEDC_* */
    if (d->type == SC_PT_INT || d->type == SC_PT_SIZE || d->type == SC_PT_DOUBLE) CHECK(d->lo <= d->hi);
    if (!d->dflt) continue;
    long long x;
    size_t z;
    double f;
    int w;
    schedc_status st = d->type == SC_PT_INT      ? sc_param_parse_int((sc_param)i, d->dflt, &x)
                       : d->type == SC_PT_SIZE   ? sc_param_parse_size((sc_param)i, d->dflt, &z)
                       : d->type == SC_PT_DOUBLE ? sc_param_parse_double((sc_param)i, d->dflt, &f)
                       : d->type == SC_PT_ENUM   ? sc_param_parse_enum((sc_param)i, d->dflt, &w)
                                                 : SCHEDC_OK;
    if (st != SCHEDC_OK) fprintf(stderr, "%s's default: %s\n", d->name, schedc_errmsg());
    CHECK(st == SCHEDC_OK);
  }
}

/* docs/env.md's tables, one per scope, generated from the list. */
static const char *const type_names[] = {"int", "size", "double", "enum", "string", "path"};
static size_t markdown(char *buf, size_t cap) {
  static const char *const heads[] = {"Read by the library", "Read by the schedc command",
                                      "Not schedc's own: set by launchers or the system"};
  size_t w = 0;
#define PUT(...) (w += (size_t)snprintf(buf + w, w < cap ? cap - w : 0, __VA_ARGS__))
  for (int s = SC_PS_LIB; s <= SC_PS_EXT; s++) {
    PUT("%s### %s\n\n| variable | type | legal values | default | meaning |\n|---|---|---|---|---|\n",
        s == SC_PS_LIB ? "" : "\n", heads[s]);
    for (int i = 0; i < SC_P_COUNT_; i++) {
      const sc_param_def *d = &sc_params[i];
      if ((int)d->scope != s) continue;
      char legal[512];
      sc_param_legal((sc_param)i, legal, sizeof legal);
      PUT("| `%s` | %s | %s | %s%s%s | %s |\n", d->name, type_names[d->type], legal, d->dflt ? "`" : "",
          d->dflt ? d->dflt : "-", d->dflt ? "`" : "", d->doc);
    }
  }
#undef PUT
  return w;
}

static void docs(const char *path) {
  static char want[1 << 16];
  CHECK(markdown(want, sizeof want) < sizeof want);
  size_t len = 0;
  char *doc = sc_read_file(path, &len);
  CHECK(doc != NULL);
  if (!doc) return;
  const char *begin = "<!-- params:begin -->\n", *end = "<!-- params:end -->";
  char *b = strstr(doc, begin), *e = b ? strstr(b, end) : NULL;
  CHECK(b && e);
  if (b && e) {
    b += strlen(begin);
    *e = 0;
    if (strcmp(b, want)) {
      fprintf(stderr, "%s: the table between the params markers is not common/params.h's list; regenerate it "
              "with `test_params --markdown`\n", path);
      size_t i = 0;
      while (b[i] && b[i] == want[i]) i++;
      size_t line = i;
      while (line && want[line - 1] != '\n') line--;
      fprintf(stderr, "first difference, expected line: %.*s\n", (int)strcspn(want + line, "\n"), want + line);
    }
    CHECK(strcmp(b, want) == 0);
  }
  free(doc);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--markdown")) {
    static char out[1 << 16];
    markdown(out, sizeof out);
    fputs(out, stdout);
    return 0;
  }
  ints();
  sizes();
  doubles();
  enums();
  readers();
  call_sites();
  the_list();
  if (argc > 1) docs(argv[1]);
  return DONE();
}
