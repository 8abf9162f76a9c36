/*
 * info.c — schedc_version, schedc_revision and schedc_info (`schedc info`, `python -m schedc info`):
 * what this build contains and what it finds on this machine, as text to paste into a bug report or
 * as JSON. Every fact comes from the part that owns it — backends.h's list and each loader's probe
 * (probe.h), the CPU loops' dispatch (sc_simd_paths_get), the parameter list — never re-detected here.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "backends.h"
#include "cpufeat.h"
#include "dl.h"
#include "err.h"
#include "fileio.h"
#include "ops.h"
#include "params.h"
#include "probe.h"
#include "strbuf.h"
#include "topology.h"

#define SC_STR_(x) #x
#define SC_STR(x) SC_STR_(x)
static const char version[] = SC_STR(SCHEDC_VERSION_MAJOR) "." SC_STR(SCHEDC_VERSION_MINOR) "." SC_STR(SCHEDC_VERSION_PATCH);
extern const char sc_git_revision[]; /* gen/gitrev.c, written at every build by cmake/gitrev.cmake */

const char *schedc_version(void) { return version; }
const char *schedc_revision(void) { return sc_git_revision; }

#ifndef SC_BUILD_TYPE
#define SC_BUILD_TYPE "unknown"
#endif

/* The optional libraries, in the order the report lists them: X(label, probe). */
#define SC_LIBRARY_LIST(X)                                                                        \
  X("NVRTC", sc_nvrtc_probe)                                                                      \
  X("CUDA driver", sc_cudrv_probe)                                                                \
  X("NCCL", sc_nccl_probe)                                                                        \
  X("NVML", sc_tp_nvml_probe)                                                                     \
  X("libclang", sc_ops_clang_probe)                                                               \
  X("hwloc", sc_tp_hwloc_probe)                                                                   \
  X("MPI", sc_mpi_probe)                                                                          \
  X("UCX", sc_ucx_probe)

typedef struct row { const char *name; sc_probe p; } row;
#define SC_COUNT_(name, fn) +1
enum { NBACKENDS = 0 SC_BACKEND_LIST(SC_COUNT_), NLIBS = 0 SC_LIBRARY_LIST(SC_COUNT_), MAXNUMA = 64, MAXGPU = 64, MAXENV = SC_P_COUNT_ + 32 };
#undef SC_COUNT_

/* Everything the report says, gathered once, then written as text or JSON. */
typedef struct facts {
  char library[512], compiler[160], os[256], cpu_model[160];
  row backends[NBACKENDS], libs[NLIBS];
  sc_simd_paths simd;
  long cpus_online, cpus_usable;
  int nnuma, numa_id[MAXNUMA];
  char numa_cpus[MAXNUMA][120];
  int ngpu;
  sc_gpu_seen gpu[MAXGPU];
  sc_probe cuda;
  char cache[1024];
  int cache_on, cache_writable;
  int shm_ok;
  unsigned long long shm_free, shm_total;
  char shm_why[128];
  int nenv;
  struct { char name[64]; const char *value; int known; char refused[512]; } env[MAXENV];
} facts;

static void first_line(const char *path, const char *key, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  char line[512];
  out[0] = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (key && strncmp(line, key, strlen(key))) continue;
    const char *v = key ? strchr(line, ':') : line;
    if (!v) continue;
    v += key ? 1 : 0;
    v += strspn(v, " \t");
    snprintf(out, cap, "%.*s", (int)strcspn(v, "\n"), v);
    break;
  }
  if (f) fclose(f);
}

static int numa_nodes(facts *F) {
  DIR *d = opendir("/sys/devices/system/node");
  if (!d) return 0;
  int ids[MAXNUMA], n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < MAXNUMA;) {
    char *end;
    if (strncmp(e->d_name, "node", 4) || !e->d_name[4]) continue;
    long id = strtol(e->d_name + 4, &end, 10);
    if (*end || id < 0 || id > 1 << 20) continue;
    int k = n++; /* insertion sort: nodes in id order */
    while (k > 0 && ids[k - 1] > id) { ids[k] = ids[k - 1]; k--; }
    ids[k] = (int)id;
  }
  closedir(d);
  for (int i = 0; i < n; i++) {
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", ids[i]);
    F->numa_id[i] = ids[i];
    first_line(path, NULL, F->numa_cpus[i], sizeof F->numa_cpus[i]);
  }
  return n;
}

/* Why a set variable's value is refused, as its readers would say it, into why[cap]; "" if it
 * is accepted. */
static void check_param(sc_param p, char *why, size_t cap) {
  long long i;
  size_t z;
  double d;
  int e;
  schedc_status st = SCHEDC_OK;
  switch (sc_params[p].type) {
  case SC_PT_INT: st = sc_param_int(p, &i); break;
  case SC_PT_SIZE: st = sc_param_size(p, &z); break;
  case SC_PT_DOUBLE: st = sc_param_double(p, &d); break;
  case SC_PT_ENUM: st = sc_param_enum(p, &e); break;
  case SC_PT_STR:
  case SC_PT_PATH: break;
  }
  snprintf(why, cap, "%s", st == SCHEDC_OK ? "" : schedc_errmsg());
}

/* The variables of the list that are set (a malformed value with its refusal), then the SCHEDC_*
 * names the list lacks. */
static void environment(facts *F) {
  for (int p = 0; p < SC_P_COUNT_ && F->nenv < MAXENV; p++) {
    const char *v = sc_param_raw((sc_param)p);
    if (!v) continue;
    snprintf(F->env[F->nenv].name, sizeof F->env[F->nenv].name, "%s", sc_params[p].name);
    F->env[F->nenv].value = v;
    F->env[F->nenv].known = 1;
    check_param((sc_param)p, F->env[F->nenv].refused, sizeof F->env[F->nenv].refused);
    F->nenv++;
  }
  for (int i = 0; sc_param_stray(i) && F->nenv < MAXENV; i++) {
    const char *e = sc_param_stray(i), *eq = strchr(e, '=');
    snprintf(F->env[F->nenv].name, sizeof F->env[F->nenv].name, "%.*s", (int)(eq ? (size_t)(eq - e) : strlen(e)), e);
    F->env[F->nenv].value = eq ? eq + 1 : "";
    F->nenv++;
  }
}

static void gather(facts *F) {
  memset(F, 0, sizeof *F);
  sc_dl_addr_path((const void *)(size_t)schedc_info, F->library, sizeof F->library);
#if defined(__clang__)
  snprintf(F->compiler, sizeof F->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
  snprintf(F->compiler, sizeof F->compiler, "gcc %s", __VERSION__);
#else
  snprintf(F->compiler, sizeof F->compiler, "unknown compiler");
#endif
  struct utsname u;
  if (uname(&u) == 0) snprintf(F->os, sizeof F->os, "%s %s %s, glibc %s", u.sysname, u.release, u.machine, gnu_get_libc_version());
  int i = 0;
#define SC_ROW_(label, fn) F->backends[i].name = label; fn(&F->backends[i].p); i++;
  SC_BACKEND_LIST(SC_ROW_)
#undef SC_ROW_
  i = 0;
#define SC_ROW_(label, fn) F->libs[i].name = label; fn(&F->libs[i].p); i++;
  SC_LIBRARY_LIST(SC_ROW_)
#undef SC_ROW_
  sc_simd_paths_get(&F->simd);
  first_line("/proc/cpuinfo", "model name", F->cpu_model, sizeof F->cpu_model);
  F->cpus_online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  F->cpus_usable = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
  F->nnuma = numa_nodes(F);
  F->ngpu = sc_cuda_gpus(F->gpu, MAXGPU);
  sc_cuda_probe(&F->cuda);
  F->cache_on = sc_cache_dir(F->cache, sizeof F->cache);
  F->cache_writable = F->cache_on && access(F->cache, W_OK) == 0;
  struct statvfs sv;
  F->shm_ok = statvfs("/dev/shm", &sv) == 0;
  if (F->shm_ok) {
    F->shm_free = (unsigned long long)sv.f_bavail * sv.f_frsize;
    F->shm_total = (unsigned long long)sv.f_blocks * sv.f_frsize;
  } else {
    snprintf(F->shm_why, sizeof F->shm_why, "%s", strerror(errno));
  }
  environment(F);
}

static void bytes(sc_strbuf *b, unsigned long long n) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int k = 0;
  while (v >= 1024 && k < 4) { v /= 1024; k++; }
  sc_strbuf_printf(b, k ? "%.1f %s" : "%.0f %s", v, unit[k]);
}

static void text(sc_strbuf *b, const facts *F) {
  sc_strbuf_printf(b, "schedc %s (git %s)\n", version, sc_git_revision);
  sc_strbuf_printf(b, "library: %s\n", F->library[0] ? F->library : "?");
  sc_strbuf_printf(b, "built: %s, %s", F->compiler, SC_BUILD_TYPE);
#if defined(__SANITIZE_ADDRESS__)
  sc_strbuf_puts(b, ", ASan+UBSan");
#elif defined(__SANITIZE_THREAD__)
  sc_strbuf_puts(b, ", TSan");
#endif
  sc_strbuf_printf(b, "\nos: %s\n", F->os);
  sc_strbuf_puts(b, "backends:\n");
  for (int i = 0; i < NBACKENDS; i++) {
    const sc_probe *p = &F->backends[i].p;
    sc_strbuf_printf(b, "  %-8s %s", F->backends[i].name, !p->built ? "not built" : p->found ? "yes" : "no");
    if (p->why[0]) sc_strbuf_printf(b, ": %s", p->why);
    sc_strbuf_puts(b, "\n");
  }
  sc_strbuf_puts(b, "libraries:\n");
  for (int i = 0; i < NLIBS; i++) {
    const sc_probe *p = &F->libs[i].p;
    sc_strbuf_printf(b, "  %-12s %s", F->libs[i].name, p->found ? "found" : !p->built ? "not built" : "not found");
    if (p->found) sc_strbuf_printf(b, ": %s", p->path[0] ? p->path : "?");
    if (p->found && p->version[0]) sc_strbuf_printf(b, " (%s)", p->version);
    if (p->why[0]) sc_strbuf_printf(b, "%s%s", p->found ? "; " : ": ", p->why);
    sc_strbuf_puts(b, "\n");
  }
  const sc_simd_paths *s = &F->simd;
  sc_strbuf_printf(b, "cpu: %s\n", F->cpu_model[0] ? F->cpu_model : "?");
  sc_strbuf_printf(b, "  vector path: %s (reduce %s, checksum %s, f16 %s, bf16 %s, exact %s)\n", s->best, s->reduce,
                   s->checksum, s->f16, s->bf16, s->exact);
  sc_strbuf_printf(b, "  cpus: %ld online, %ld usable by this process\n", F->cpus_online, F->cpus_usable);
  sc_strbuf_printf(b, "  numa nodes: %d", F->nnuma);
  for (int i = 0; i < F->nnuma; i++) sc_strbuf_printf(b, "%snode%d: cpus %s", i ? "; " : " (", F->numa_id[i], F->numa_cpus[i]);
  sc_strbuf_puts(b, F->nnuma ? ")\n" : " (no /sys/devices/system/node)\n");
  sc_strbuf_printf(b, "gpus: %d%s\n", F->ngpu, F->ngpu ? "" : " (backends: cuda says why)");
  for (int i = 0; i < F->ngpu && i < MAXGPU; i++) sc_strbuf_printf(b, "  %d: %s, %d SMs\n", i, F->gpu[i].arch, F->gpu[i].sms);
  if (F->cache_on) sc_strbuf_printf(b, "kernel cache: %s%s\n", F->cache, F->cache_writable ? "" : " (not writable)");
  else sc_strbuf_puts(b, "kernel cache: off\n");
  sc_strbuf_puts(b, "/dev/shm: ");
  if (F->shm_ok) {
    bytes(b, F->shm_free);
    sc_strbuf_puts(b, " free of ");
    bytes(b, F->shm_total);
    sc_strbuf_puts(b, "\n");
  } else {
    sc_strbuf_printf(b, "unavailable (%s)\n", F->shm_why);
  }
  sc_strbuf_puts(b, "environment:");
  for (int i = 0; i < F->nenv; i++) {
    sc_strbuf_printf(b, "\n  %s=%s", F->env[i].name, F->env[i].value);
    if (!F->env[i].known) sc_strbuf_puts(b, "  (not read by the library: misspelt?)");
    else if (F->env[i].refused[0]) sc_strbuf_printf(b, "  (refused: %s)", F->env[i].refused);
  }
  sc_strbuf_puts(b, F->nenv ? "\n" : " none of schedc's variables is set\n");
}

static void json_probe(sc_strbuf *b, const char *name, const sc_probe *p, int lib) {
  sc_strbuf_puts(b, "{\"name\": ");
  sc_strbuf_json(b, name);
  sc_strbuf_printf(b, ", \"built\": %s, \"%s\": %s", p->built ? "true" : "false", lib ? "found" : "available",
                   p->found ? "true" : "false");
  if (lib) {
    sc_strbuf_puts(b, ", \"path\": ");
    sc_strbuf_json(b, p->path);
    sc_strbuf_puts(b, ", \"version\": ");
    sc_strbuf_json(b, p->version);
  }
  sc_strbuf_puts(b, ", \"detail\": ");
  sc_strbuf_json(b, p->why);
  sc_strbuf_puts(b, "}");
}

static void json_kv(sc_strbuf *b, const char *sep, const char *key, const char *v) {
  sc_strbuf_printf(b, "%s\"%s\": ", sep, key);
  sc_strbuf_json(b, v);
}

static void json(sc_strbuf *b, const facts *F) {
  json_kv(b, "{", "version", version);
  json_kv(b, ", ", "revision", sc_git_revision);
  json_kv(b, ", ", "library", F->library);
  json_kv(b, ",\n \"build\": {", "compiler", F->compiler);
  json_kv(b, ", ", "type", SC_BUILD_TYPE);
#if defined(__SANITIZE_ADDRESS__)
  json_kv(b, ", ", "sanitizers", "asan+ubsan");
#elif defined(__SANITIZE_THREAD__)
  json_kv(b, ", ", "sanitizers", "tsan");
#else
  json_kv(b, ", ", "sanitizers", "");
#endif
  json_kv(b, "}, ", "os", F->os);
  sc_strbuf_puts(b, ",\n \"backends\": [");
  for (int i = 0; i < NBACKENDS; i++) {
    sc_strbuf_puts(b, i ? ",\n  " : "\n  ");
    json_probe(b, F->backends[i].name, &F->backends[i].p, 0);
  }
  sc_strbuf_puts(b, "],\n \"libraries\": [");
  for (int i = 0; i < NLIBS; i++) {
    sc_strbuf_puts(b, i ? ",\n  " : "\n  ");
    json_probe(b, F->libs[i].name, &F->libs[i].p, 1);
  }
  const sc_simd_paths *s = &F->simd;
  json_kv(b, "],\n \"cpu\": {", "model", F->cpu_model);
  json_kv(b, ", \"vector_path\": {", "best", s->best);
  json_kv(b, ", ", "reduce", s->reduce);
  json_kv(b, ", ", "checksum", s->checksum);
  json_kv(b, ", ", "f16", s->f16);
  json_kv(b, ", ", "bf16", s->bf16);
  json_kv(b, ", ", "exact", s->exact);
  sc_strbuf_printf(b, "}, \"cpus_online\": %ld, \"cpus_usable\": %ld, \"numa_nodes\": [", F->cpus_online, F->cpus_usable);
  for (int i = 0; i < F->nnuma; i++) {
    sc_strbuf_printf(b, "%s{\"id\": %d, ", i ? ", " : "", F->numa_id[i]);
    json_kv(b, "", "cpus", F->numa_cpus[i]);
    sc_strbuf_puts(b, "}");
  }
  sc_strbuf_printf(b, "]},\n \"gpus\": {\"count\": %d, \"devices\": [", F->ngpu);
  for (int i = 0; i < F->ngpu && i < MAXGPU; i++)
    sc_strbuf_printf(b, "%s{\"index\": %d, \"arch\": \"%s\", \"sms\": %d}", i ? ", " : "", i, F->gpu[i].arch, F->gpu[i].sms);
  json_kv(b, "], ", "detail", F->cuda.why);
  json_kv(b, "},\n ", "kernel_cache", F->cache_on ? F->cache : "");
  sc_strbuf_printf(b, ", \"kernel_cache_writable\": %s", F->cache_writable ? "true" : "false");
  if (F->shm_ok) {
    sc_strbuf_printf(b, ",\n \"dev_shm\": {\"free_bytes\": %llu, \"total_bytes\": %llu}", F->shm_free, F->shm_total);
  } else {
    json_kv(b, ",\n \"dev_shm\": {", "error", F->shm_why);
    sc_strbuf_puts(b, "}");
  }
  sc_strbuf_puts(b, ",\n \"environment\": [");
  for (int i = 0; i < F->nenv; i++) {
    json_kv(b, i ? ",\n  {" : "\n  {", "name", F->env[i].name);
    json_kv(b, ", ", "value", F->env[i].value);
    sc_strbuf_printf(b, ", \"known\": %s", F->env[i].known ? "true" : "false");
    json_kv(b, ", ", "refused", F->env[i].refused);
    sc_strbuf_puts(b, "}");
  }
  sc_strbuf_puts(b, "]}\n");
}

schedc_status schedc_info(schedc_info_format fmt, char **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "schedc_info: out is NULL");
  *out = NULL;
  if (fmt != SCHEDC_INFO_TEXT && fmt != SCHEDC_INFO_JSON)
    return sc_err(SCHEDC_EINVAL, "schedc_info: format %d (SCHEDC_INFO_TEXT or SCHEDC_INFO_JSON)", (int)fmt);
  facts *F = malloc(sizeof *F);
  if (!F) return sc_err(SCHEDC_ENOMEM, "schedc_info: out of memory");
  gather(F);
  sc_strbuf b = SC_STRBUF_INIT;
  if (fmt == SCHEDC_INFO_JSON) json(&b, F);
  else text(&b, F);
  free(F);
  if (b.oom) {
    sc_strbuf_free(&b);
    return sc_err(SCHEDC_ENOMEM, "schedc_info: out of memory");
  }
  *out = b.p;
  return SCHEDC_OK;
}
