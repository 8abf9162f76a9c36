/*
 * cuda_compile.c — schedc_cuda_compile: NVRTC compilation behind a cache keyed by (source,
 * options, NVRTC version, arch), in memory and on disk (files written atomically: temp name,
 * then rename). The bottom of the cuda backend beside the device tables: the driver loads its
 * modules through it.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"
#include "fileio.h"
#include "hash.h"
#include "nvrtc.h"

void schedc_free(void *p) { free(p); }

typedef struct centry { uint64_t key; void *img; size_t len; struct centry *next; } centry;
static centry *mem_cache;
static int mem_count;
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}


static void *dup_img(const void *p, size_t n) {
  char *d = malloc(n + 1);
  if (d) { memcpy(d, p, n); d[n] = 0; }
  return d;
}

schedc_status schedc_cuda_compile(const char *source, const char *arch, int ptx, void **image, size_t *len,
                                  schedc_cuda_compile_info *info) {
  double t0 = now_s();
  if (!image || !len) return sc_err(SCHEDC_EINVAL, "image or len is NULL");
  *image = NULL;
  *len = 0;
  if (!source || !arch) return sc_err(SCHEDC_EINVAL, "source or arch is NULL");
  int major = 0, minor = 0;
  if (strncmp(arch, "sm_", 3) || sscanf(arch + 3, "%d", &major) != 1 || major < 50 || major > 200)
    return sc_err(SCHEDC_EINVAL, "arch '%s': expected sm_XX, e.g. sm_80 or sm_90", arch);
  schedc_cuda_compile_info in = SCHEDC_CUDA_COMPILE_INFO_INIT;
  schedc_status st = sc_nvrtc_version(&in.nvrtc_major, &in.nvrtc_minor);
  if (st != SCHEDC_OK) return st;
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s%s", ptx ? "compute_" : "sm_", arch + 3);
  const char *opts[] = {archopt, "--fmad=false", "--std=c++17"};
  int nopts = 3;
  uint64_t key = sc_fnv(SC_FNV_INIT, source, strlen(source) + 1);
  for (int i = 0; i < nopts; i++) key = sc_fnv(key, opts[i], strlen(opts[i]) + 1);
  int ver[2] = {in.nvrtc_major, in.nvrtc_minor};
  key = sc_fnv(key, ver, sizeof ver);
  key = sc_fnv(key, &ptx, sizeof ptx);
  (void)minor;
  /* memory */
  pthread_mutex_lock(&cache_mu);
  for (centry *e = mem_cache; e; e = e->next)
    if (e->key == key) {
      *image = dup_img(e->img, e->len);
      *len = e->len;
      break;
    }
  pthread_mutex_unlock(&cache_mu);
  char dir[512], path[600] = "";
  int disk = sc_cache_dir(dir, sizeof dir);
  if (disk) snprintf(path, sizeof path, "%s/%016llx.%s", dir, (unsigned long long)key, ptx ? "ptx" : "cubin");
  if (!*image && disk) *image = sc_read_file(path, len);
  if (*image) {
    in.cache_hit = 1;
  } else {
    char *out, *log;
    st = sc_nvrtc_compile(source, opts, nopts, ptx, &out, len, &log);
    if (st == SCHEDC_EINVAL) {
      char dump[600] = "(not dumped: cache off)";
      if (disk) {
        snprintf(dump, sizeof dump, "%s/%016llx.failed.cu", dir, (unsigned long long)key);
        sc_write_atomic(dump, source, strlen(source));
      }
      st = sc_err(SCHEDC_EINVAL, "NVRTC failed to compile (options: %s %s %s; source: %s):\n%s", opts[0], opts[1],
                  opts[2], dump, log ? log : "(no log)");
      free(log);
      return st;
    }
    free(log);
    if (st != SCHEDC_OK) return st;
    *image = out;
    if (disk) sc_write_atomic(path, out, *len);
  }
  pthread_mutex_lock(&cache_mu);
  int have = 0;
  for (centry *e = mem_cache; e && !have; e = e->next) have = e->key == key;
  centry *e = have || mem_count >= 256 ? NULL : malloc(sizeof *e);
  if (e && (e->img = dup_img(*image, *len))) {
    e->key = key;
    e->len = *len;
    e->next = mem_cache;
    mem_cache = e;
    mem_count++;
  } else {
    free(e);
  }
  pthread_mutex_unlock(&cache_mu);
  in.seconds = now_s() - t0;
  snprintf(in.cache_file, sizeof in.cache_file, "%s", path);
  if (info) {
    size_t sz = info->size < sizeof in ? info->size : sizeof in;
    memcpy(info, &in, sz);
    info->size = sz;
  }
  return SCHEDC_OK;
}
