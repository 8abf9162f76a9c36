/*
 * emu.c — the emulated device of the test plugin libschedc_emu.so (SCHEDC_CUDA_PLUGIN, see
 * runtime/cuda/cuda_plugin.h), and the plugin's entry point: the generated CUDA source compiled
 * for the host with the C++ compiler ($CXX, else c++) and emu_shim.hpp, loaded with dlopen.
 * Device memory is host memory, a launch runs its blocks as OS threads (started at once, joined
 * by the next operation on its stream), copies run at once. Allocations are memfd mappings, so
 * another process maps them through /proc/PID/fd (the IPC handles of one process per GPU). It
 * checks the generated kernels' logic, ordering and arithmetic without a GPU; it says nothing
 * about GPU memory ordering or speed. Test support only: never part of libschedc.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu.h"
#include "fileio.h" /* the plugin's own copy: stateless libc helpers (tests/CMakeLists.txt) */
#include "ir.h"     /* sc_fnv, inline */

#ifndef SC_EMU_SHIM_DIR
#error "SC_EMU_SHIM_DIR: the directory of emu_shim.hpp (tests/CMakeLists.txt defines it)"
#endif
#define MAX_PENDING 64

static const sc_cuda_host *host; /* the library's, from sc_cuda_plugin_v1 */

schedc_status sc_emu_err(schedc_status st, const char *fmt, ...) {
  char small[512], *msg = small;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1))) { /* long: a compiler's log */
    va_start(ap, fmt);
    vsnprintf(msg, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  st = host->err(st, msg ? msg : small);
  if (msg != small) free(msg);
  return st;
}

typedef struct emu_fn { struct emu_module *m; void *sym; char name[48]; struct emu_fn *next; } emu_fn;

typedef struct emu_module {
  uint64_t key;
  emu_fn *fns; /* looked up so far (kept with the module) */
  void *so;
  void *(*start)(void *, const char *, unsigned, unsigned, void **);
  void (*wait)(void *);
  struct emu_module *next;
} emu_module;


/* A stream: the launches not yet joined (everything else ran when it was enqueued). */
typedef struct emu_stream {
  pthread_mutex_t mu;
  int n;
  struct { void *h; void (*wait)(void *); } p[MAX_PENDING];
} emu_stream;

static emu_stream null_stream = {PTHREAD_MUTEX_INITIALIZER, 0, {{0, 0}}};
static emu_module *modules; /* compiled once per source, kept for the process */
static pthread_mutex_t mod_mu = PTHREAD_MUTEX_INITIALIZER;

static emu_stream *S(void *s) { return s ? (emu_stream *)s : &null_stream; }

static schedc_status emu_init(int *ndev) {
  const char *e = getenv("SCHEDC_EMU_DEVICES");
  *ndev = e && atoi(e) > 0 ? atoi(e) : 8;
  return SCHEDC_OK;
}
static schedc_status emu_info(int dev, char arch[16], int *sms, double *ticks, int *coop, int *threads) {
  (void)dev;
  snprintf(arch, 16, "sm_90");
  *sms = 8;      /* few blocks: each is an OS thread */
  *ticks = 1e9;  /* the shim's clock64 counts nanoseconds */
  *coop = 1;
  *threads = 4;  /* coroutines: enough to exercise the strided loops and barriers */
  return SCHEDC_OK;
}
static schedc_status emu_select(int dev) { (void)dev; return SCHEDC_OK; }
static schedc_status emu_peer(int peer) { (void)peer; return SCHEDC_OK; }
/* Device memory: shared mappings of memfds (fresh ones are zero), listed with their size and fd
 * (fd -1: a peer's allocation mapped by ipc_open). */
typedef struct emu_mem { char *p; size_t size; int fd; struct emu_mem *next; } emu_mem;
static emu_mem *mems;
static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
#define EMU_IPC_MAGIC 0x5343454du /* "SCEM" */
typedef struct emu_handle { uint32_t magic; int32_t pid, fd; uint64_t size; } emu_handle;

static schedc_status emu_map(int fd, size_t size, int own, void **p) {
  emu_mem *m = calloc(1, sizeof *m);
  void *q = m ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (q == MAP_FAILED) {
    free(m);
    if (own) close(fd);
    return sc_emu_err(SCHEDC_ENOMEM, "emulated device: cannot map %zu bytes", size);
  }
  *m = (emu_mem){q, size, own ? fd : -1, NULL};
  if (!own) close(fd);
  pthread_mutex_lock(&mem_mu);
  m->next = mems;
  mems = m;
  pthread_mutex_unlock(&mem_mu);
  *p = q;
  return SCHEDC_OK;
}
/* Remove p from the list; the entry (NULL if p is unknown) is the caller's. */
static emu_mem *emu_unlist(const void *p) {
  pthread_mutex_lock(&mem_mu);
  emu_mem **at = &mems;
  while (*at && (*at)->p != p) at = &(*at)->next;
  emu_mem *m = *at;
  if (m) *at = m->next;
  pthread_mutex_unlock(&mem_mu);
  return m;
}
static schedc_status emu_alloc(size_t bytes, void **p) {
  size_t n = bytes ? (bytes + 4095) / 4096 * 4096 : 4096;
  /* Fault hook for tests: SCHEDC_EMU_MAX_ALLOC=B fails every allocation above B bytes, as a GPU
   * short of memory would. */
  const char *lim = getenv("SCHEDC_EMU_MAX_ALLOC");
  if (lim && *lim && bytes > strtoull(lim, NULL, 10))
    return sc_emu_err(SCHEDC_ENOMEM, "emulated device: out of memory (%zu bytes; SCHEDC_EMU_MAX_ALLOC=%s)", bytes, lim);
  int fd = memfd_create("schedc-emu", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)n) != 0) {
    if (fd >= 0) close(fd);
    return sc_emu_err(SCHEDC_ENOMEM, "emulated device: out of memory (%zu bytes)", bytes);
  }
  return emu_map(fd, n, 1, p);
}
static void emu_release(void *p) {
  emu_mem *m = p ? emu_unlist(p) : NULL;
  if (!m) return;
  munmap(m->p, m->size);
  if (m->fd >= 0) close(m->fd);
  free(m);
}
static schedc_status emu_ipc_get(void *p, sc_ipc *h) {
  pthread_mutex_lock(&mem_mu);
  emu_mem *m = mems;
  while (m && m->p != p) m = m->next;
  emu_handle e = {EMU_IPC_MAGIC, (int32_t)getpid(), m ? m->fd : -1, m ? m->size : 0};
  pthread_mutex_unlock(&mem_mu);
  if (!m || m->fd < 0) return sc_emu_err(SCHEDC_EINVAL, "emulated device: %p is not an allocation of this process", p);
  memset(h, 0, sizeof *h);
  memcpy(h->b, &e, sizeof e);
  return SCHEDC_OK;
}
static schedc_status emu_ipc_open(const sc_ipc *h, void **p) {
  emu_handle e;
  memcpy(&e, h->b, sizeof e);
  if (e.magic != EMU_IPC_MAGIC) return sc_emu_err(SCHEDC_EINVAL, "emulated device: not an emulated IPC handle");
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)e.pid, (int)e.fd);
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return sc_emu_err(SCHEDC_EIO, "emulated device: cannot open process %d's memory (%s): %s", (int)e.pid, path, strerror(errno));
  return emu_map(fd, (size_t)e.size, 0, p);
}

static schedc_status emu_sync(void *s) {
  emu_stream *st = S(s);
  pthread_mutex_lock(&st->mu);
  for (int i = 0; i < st->n; i++) st->p[i].wait(st->p[i].h);
  st->n = 0;
  pthread_mutex_unlock(&st->mu);
  return SCHEDC_OK;
}
static schedc_status emu_copy(void *dst, const void *src, size_t bytes, void *s) {
  emu_sync(s);
  if (bytes && dst != src) memmove(dst, src, bytes);
  return SCHEDC_OK;
}

/* A module: kept in memory per process, and its shared object in the kernel cache directory
 * (keyed by the source, the shim's text and the compiler), so forked ranks and later runs load
 * it instead of compiling again. */
static schedc_status emu_register(void *h, uint64_t key, void **module) {
  emu_module *m = calloc(1, sizeof *m);
  if (!m) { dlclose(h); return sc_emu_err(SCHEDC_ENOMEM, "out of memory"); }
  m->key = key;
  m->so = h;
  *(void **)&m->start = dlsym(h, "sc_emu_start");
  *(void **)&m->wait = dlsym(h, "sc_emu_wait");
  pthread_mutex_lock(&mod_mu);
  m->next = modules;
  modules = m;
  pthread_mutex_unlock(&mod_mu);
  *module = m;
  return SCHEDC_OK;
}

/* Compile source with the shim into a shared object, load it, and keep a copy at `cached` (when
 * not empty). */
static schedc_status emu_compile(const char *source, const char *shim, const char *cxx, const char *flags,
                                 const char *cached, uint64_t key, void **module) {
  char dir[] = "/tmp/schedc_emu_XXXXXX";
  if (!mkdtemp(dir)) return sc_emu_err(SCHEDC_EIO, "emulated device: cannot make a build directory in /tmp");
  char cu[128], unit[128], so[128], log[128], cmd[2048];
  snprintf(cu, sizeof cu, "%s/kernels.cu", dir);
  snprintf(unit, sizeof unit, "%s/unit.cpp", dir);
  snprintf(so, sizeof so, "%s/kernels.so", dir);
  snprintf(log, sizeof log, "%s/log", dir);
  char unit_src[1200];
  int k = snprintf(unit_src, sizeof unit_src, "#include \"%s\"\n#include \"%s\"\n#define SC_EMU_TAIL\n#include \"%s\"\n", shim, cu, shim);
  if (sc_write_atomic(cu, source, strlen(source)) || sc_write_atomic(unit, unit_src, (size_t)k))
    return sc_emu_err(SCHEDC_EIO, "emulated device: cannot write %s", dir);
  snprintf(cmd, sizeof cmd, "'%s' %s '%s' -o '%s' >'%s' 2>&1", cxx, flags, unit, so, log);
  if (system(cmd) != 0) {
    size_t n = 0;
    char *text = sc_read_file(log, &n);
    schedc_status st = sc_emu_err(SCHEDC_EINVAL, "emulated device: the host compiler failed on the generated source (kept in %s; shim %s):\n%.1500s",
                              cu, shim, text ? text : "(no log)");
    free(text);
    return st; /* the directory stays for inspection */
  }
  schedc_status st;
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    st = sc_emu_err(SCHEDC_EINTERNAL, "emulated device: cannot load %s: %s", so, dlerror());
  } else {
    st = emu_register(h, key, module);
    size_t n = 0;
    char *img = cached[0] ? sc_read_file(so, &n) : NULL;
    if (img) sc_write_atomic(cached, img, n); /* best effort: a cache that cannot be written only costs time */
    free(img);
  }
  unlink(cu); unlink(unit); unlink(so); unlink(log); rmdir(dir); /* dlopen keeps its mapping */
  return st;
}

static void *load_cached(const char *cached) {
  return access(cached, R_OK) == 0 ? dlopen(cached, RTLD_NOW | RTLD_LOCAL) : NULL;
}

static schedc_status emu_load(const char *source, const char *arch, void **module) {
  (void)arch;
  const char *shim = getenv("SCHEDC_EMU_SHIM"), *cxx = getenv("CXX");
  /* -O0: the tests run the kernels mostly on a few thousand elements, so compiling is what costs (-O0
   * takes 38% less compiler time than -O1 on a generated unit, measured); the bits do not depend
   * on it (no contraction, no fast-math at any level). */
  char shimbuf[1024], flags[] = "-std=c++17 -O0 -ffp-contract=off -fno-fast-math -fPIC -shared -pthread -w";
  if (!shim || !*shim) { snprintf(shimbuf, sizeof shimbuf, "%s/emu_shim.hpp", SC_EMU_SHIM_DIR); shim = shimbuf; }
  if (!cxx || !*cxx) cxx = "c++";
  size_t shim_len = 0;
  char *shim_text = sc_read_file(shim, &shim_len);
  if (!shim_text) return sc_emu_err(SCHEDC_EIO, "emulated device: cannot read the shim %s: %s", shim, strerror(errno));
  uint64_t key = sc_fnv(SC_FNV_INIT, source, strlen(source));
  key = sc_fnv(key, shim_text, shim_len);
  key = sc_fnv(sc_fnv(key, cxx, strlen(cxx)), flags, strlen(flags));
  free(shim_text);
  pthread_mutex_lock(&mod_mu);
  for (emu_module *m = modules; m; m = m->next)
    if (m->key == key) {
      pthread_mutex_unlock(&mod_mu);
      *module = m;
      return SCHEDC_OK;
    }
  pthread_mutex_unlock(&mod_mu);
  char cached[1200] = "";
  int lock = -1;
  if (host->cache_dir(cached, 1024)) {
    size_t dl = strlen(cached);
    snprintf(cached + dl, sizeof cached - dl, "/emu-%016llx.so", (unsigned long long)key);
    void *h = load_cached(cached);
    if (h) return emu_register(h, key, module);
    /* A miss: compile holding the lock of the key's bucket (64 lock files), so that processes
     * missing the same source at once (ctest -j runs cuda.emu.virtual and .devices, whose
     * kernels are the same, side by side) compile it once: the others wait, then load the
     * copy. flock is released by close and when a process dies. */
    char lp[1200];
    snprintf(lp, sizeof lp, "%.*s/emu-lock-%02u", (int)dl, cached, (unsigned)(key & 63));
    if ((lock = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) >= 0 && flock(lock, LOCK_EX) == 0 &&
        (h = load_cached(cached))) {
      close(lock);
      return emu_register(h, key, module);
    }
  }
  schedc_status st = emu_compile(source, shim, cxx, flags, cached, key, module);
  if (lock >= 0) close(lock);
  return st;
}
static void emu_unload(void *m) { (void)m; /* kept: another communicator may load the same source */ }

static schedc_status emu_kernel(void *module, const char *name, void **fn) {
  emu_module *m = module;
  pthread_mutex_lock(&mod_mu);
  emu_fn *f = m->fns;
  while (f && strcmp(f->name, name)) f = f->next;
  void *sym = f ? NULL : dlsym(m->so, name);
  if (!f && sym && (f = calloc(1, sizeof *f))) {
    f->m = m;
    f->sym = sym;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->next = m->fns;
    m->fns = f;
  }
  pthread_mutex_unlock(&mod_mu);
  if (!f) return sc_emu_err(SCHEDC_EINTERNAL, "emulated device: no kernel %s", name);
  *fn = f;
  return SCHEDC_OK;
}

static schedc_status emu_launch(void *fn, unsigned grid, unsigned block, void **params, int coop, void *s) {
  (void)coop; /* every block is an OS thread: all resident */
  emu_fn *f = fn;
  emu_stream *st = S(s);
  /* Fault hook for tests: a process that dies after the host rendezvous, before its plan kernel runs. */
  const char *ex = getenv("SCHEDC_EMU_EXIT_AT_LAUNCH");
  if (ex && !strcmp(ex, "1") && !strncmp(f->name, "schedc_rank", 11)) _exit(0);
  emu_sync(s); /* stream order: what came before has finished */
  void *h = f->m->start(f->sym, f->name, grid, block, params);
  if (!h) return sc_emu_err(SCHEDC_EINTERNAL, "emulated device: cannot launch %s", f->name);
  pthread_mutex_lock(&st->mu);
  st->p[st->n].h = h;
  st->p[st->n++].wait = f->m->wait;
  pthread_mutex_unlock(&st->mu);
  return SCHEDC_OK;
}

static schedc_status emu_stream_new(void **s) {
  emu_stream *st = calloc(1, sizeof *st);
  if (!st) return sc_emu_err(SCHEDC_ENOMEM, "out of memory");
  pthread_mutex_init(&st->mu, NULL);
  *s = st;
  return SCHEDC_OK;
}
static void emu_stream_free(void *s) {
  if (!s) return;
  emu_sync(s);
  pthread_mutex_destroy(&((emu_stream *)s)->mu);
  free(s);
}
static schedc_status emu_query(void *s, int *done) { /* launches are joined, not polled */
  *done = 1;
  return emu_sync(s);
}
/* Conservative: the waiter's later work starts only after `stream`'s work has finished. */
static schedc_status emu_join(void *waiter, void *stream) {
  (void)waiter;
  return emu_sync(stream);
}

/* Emulated device d is the same "GPU" in every process. */
static schedc_status emu_ident(int dev, unsigned long long *id) {
  *id = (unsigned long long)dev;
  return SCHEDC_OK;
}

const sc_cudev sc_cudev_emu = {"emulated (host C++)", emu_init, emu_info, emu_select, emu_peer, emu_alloc,
                               emu_release, emu_copy, emu_load, emu_unload, emu_kernel, emu_launch, emu_stream_new,
                               emu_stream_free, emu_sync, emu_query, emu_join, emu_ident, emu_ipc_get, emu_ipc_open,
                               emu_release};

/* The plugin's entry point (cuda_plugin.h): both tables, once the library's ABI is this one. */
__attribute__((visibility("default"))) sc_cuda_plugin_fn sc_cuda_plugin_v1;
schedc_status sc_cuda_plugin_v1(const sc_cuda_host *h, sc_cuda_plugin *out) {
  if (!h || h->version != SC_CUDA_PLUGIN_VERSION || !h->err || !h->cache_dir)
    return h && h->err ? h->err(SCHEDC_EINTERNAL, "the emulator plugin is of another plugin ABI version") : SCHEDC_EINTERNAL;
  host = h;
  out->dev = &sc_cudev_emu;
  out->net = &sc_cunet_emu;
  return SCHEDC_OK;
}
