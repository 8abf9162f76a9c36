/*
 * opcc.c — the CPU side of a custom operator: its element loop compiled by the system C compiler
 * into a shared object, cached under the kernel cache directory by a hash of (source, compiler
 * version, flags), and loaded with dlopen. Determinism flags as for schedc itself.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "err.h"
#include "fileio.h"
#include "hash.h"
#include "ops.h"
#include "params.h"

extern char **environ;

/* -fwrapv: integer overflow wraps, as on the GPU (and as the built-in ops do). Hidden visibility
 * and no interposition: the operator is inlined into the loop, never called through the PLT.
 * -ftree-vectorize with the dynamic cost model: at -O2 gcc 12 vectorises only loops that need no
 * remainder, so the element loop ran one element at a time (docs/performance.md); vectorised, it
 * performs the same IEEE operations per element (no FMA contraction, no reassociation). */
static const char *const FLAGS[] = {"-O2", "-ffp-contract=off", "-fno-fast-math", "-fwrapv", "-fPIC", "-shared",
                                    "-std=c11", "-fvisibility=hidden", "-fno-semantic-interposition",
                                    "-ftree-vectorize", "-fvect-cost-model=dynamic"};
#define NFLAGS (sizeof FLAGS / sizeof FLAGS[0])

/* The object is compiled where it runs, so it may use this CPU's vectors: -mavx2 when the CPU has
 * AVX2 (no -mfma: nothing to contract into). Part of the cache key, so a cache folder shared with
 * a host without AVX2 never hands it this object. */
static const char *isa_flag(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2")) return "-mavx2";
#endif
  return NULL;
}

static const char *compiler(void) {
  const char *cc = sc_param_str(SC_P_SCHEDC_CC);
  return cc ? cc : "cc";
}

/* Run argv with stdout and stderr into `log`: the exit status, or -1 with errno (not started). */
static int run(char *const *argv, const char *log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e) { errno = e; return -1; }
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

/* The compiler's `--version` first line, once per process (part of the cache key). */
static char cc_version[256];
static int cc_state; /* 0 not asked, 1 found, -1 missing */
static pthread_mutex_t cc_mu = PTHREAD_MUTEX_INITIALIZER;

static schedc_status ask_version(const char *tmpdir) {
  pthread_mutex_lock(&cc_mu);
  if (!cc_state) {
    char log[700];
    snprintf(log, sizeof log, "%s/cc-version.%d.txt", tmpdir, (int)getpid());
    char *argv[] = {(char *)compiler(), "--version", NULL};
    int rc = run(argv, log);
    size_t n;
    char *t = rc == 0 ? sc_read_file(log, &n) : NULL;
    remove(log);
    if (t) {
      char *nl = strchr(t, '\n');
      if (nl) *nl = 0;
      snprintf(cc_version, sizeof cc_version, "%s", t);
      cc_state = 1;
      free(t);
    } else cc_state = -1;
  }
  int st = cc_state;
  pthread_mutex_unlock(&cc_mu);
  if (st < 0)
    return sc_err(SCHEDC_EUNAVAIL, "custom operators are compiled for the CPU with a C compiler, and '%s' does not run: "
                  "install one (Debian/Ubuntu: apt-get install gcc) or set SCHEDC_CC to its path", compiler());
  return SCHEDC_OK;
}

static schedc_status load(const char *so, sc_opso *out) {
  void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return sc_err(SCHEDC_EIO, "cannot load the compiled operator %s: %s", so, dlerror());
  *(void **)&out->chain = dlsym(lib, "sc_op_chain");
  *(void **)&out->pairs = dlsym(lib, "sc_op_pairs");
  if (!out->chain || !out->pairs) {
    dlclose(lib);
    return sc_err(SCHEDC_EIO, "the compiled operator %s lacks sc_op_chain/sc_op_pairs (a stale cache file: remove it)", so);
  }
  out->lib = lib;
  return SCHEDC_OK;
}

schedc_status sc_ops_compile(const char *src, sc_opso *out) {
  memset(out, 0, sizeof *out);
  char dir[512], tmpdir[512] = "";
  int cached = sc_cache_dir(dir, sizeof dir - 8);
  if (cached) {
    strcat(dir, "/ops");
    mkdir(dir, 0755);
  } else {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/schedc-op-XXXXXX");
    if (!mkdtemp(tmpdir)) return sc_err(SCHEDC_EIO, "cannot make a temporary folder for the operator: %s", strerror(errno));
    snprintf(dir, sizeof dir, "%s", tmpdir);
  }
  schedc_status st = ask_version(dir);
  if (st != SCHEDC_OK) goto out;
  uint64_t h = sc_fnv(SC_FNV_INIT, src, strlen(src) + 1);
  h = sc_fnv(h, compiler(), strlen(compiler()) + 1);
  h = sc_fnv(h, cc_version, strlen(cc_version) + 1);
  for (size_t i = 0; i < NFLAGS; i++) h = sc_fnv(h, FLAGS[i], strlen(FLAGS[i]) + 1);
  const char *isa = isa_flag();
  if (isa) h = sc_fnv(h, isa, strlen(isa) + 1);
  char so[600], cfile[600], tmp[640], log[640];
  snprintf(so, sizeof so, "%s/op-%016llx.so", dir, (unsigned long long)h);
  snprintf(cfile, sizeof cfile, "%s/op-%016llx.c", dir, (unsigned long long)h);
  if (cached && access(so, R_OK) == 0 && load(so, out) == SCHEDC_OK) {
    out->cache_hit = 1;
    snprintf(out->path, sizeof out->path, "%s", so);
    goto out;
  }
  if (sc_write_atomic(cfile, src, strlen(src)) != 0) {
    st = sc_err(SCHEDC_EIO, "cannot write %s: %s", cfile, strerror(errno));
    goto out;
  }
  /* compile to a private name, then rename: concurrent processes never load a half-written file */
  snprintf(tmp, sizeof tmp, "%s.%d.%lx.tmp", so, (int)getpid(), (unsigned long)pthread_self());
  snprintf(log, sizeof log, "%s.%d.log", so, (int)getpid());
  char *argv[NFLAGS + 7];
  size_t a = 0;
  argv[a++] = (char *)compiler();
  for (size_t i = 0; i < NFLAGS; i++) argv[a++] = (char *)FLAGS[i];
  if (isa) argv[a++] = (char *)isa;
  argv[a++] = "-o";
  argv[a++] = tmp;
  argv[a++] = cfile;
  argv[a++] = "-lm";
  argv[a] = NULL;
  int rc = run(argv, log);
  if (rc != 0) {
    size_t n;
    char *t = sc_read_file(log, &n);
    st = rc < 0 ? sc_err(SCHEDC_EUNAVAIL, "cannot run the C compiler '%s' (%s): install one (apt-get install gcc) or "
                         "set SCHEDC_CC", compiler(), strerror(errno))
                : sc_err(SCHEDC_EINVAL, "the C compiler '%s' failed on the operator's element loop (%s):\n%s", compiler(),
                         cfile, t ? t : "");
    free(t);
    remove(log);
    remove(tmp);
    goto out;
  }
  remove(log);
  if (rename(tmp, so) != 0) {
    st = sc_err(SCHEDC_EIO, "cannot move the compiled operator to %s: %s", so, strerror(errno));
    remove(tmp);
    goto out;
  }
  st = load(so, out);
  if (st == SCHEDC_OK) snprintf(out->path, sizeof out->path, "%s", cached ? so : "");
out:
  if (!cached) { /* nothing stays behind: the loaded library is kept open, its file is not needed */
    remove(so);
    remove(cfile);
    rmdir(tmpdir);
  }
  return st;
}
