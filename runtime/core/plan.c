/*
 * plan.c — the public plan API: from script (dsl -> verify), to and from plan files, and the
 * read-only queries (info, transfers, proven trees).
 */
#include "plan.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planio.h"
#include "dsl.h"
#include "err.h"
#include "fileio.h"
#include "schedpath.h"

#define MAX_DIAG_LINES 50

schedc_status sc_plan_make(sc_ir *ir, schedc_plan **out) {
  *out = NULL;
  schedc_plan *p = calloc(1, sizeof *p);
  if (!p) { sc_ir_free(ir); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  p->ir = *ir;
  memset(ir, 0, sizeof *ir);
  sc_diags d;
  sc_diags_init(&d);
  int rc = sc_verify(&p->ir, &p->v, &d);
  if (rc != 0) {
    schedc_status st = SCHEDC_ENOMEM;
    if (rc > 0) {
      /* No text, no verdict: a rejection must name its diagnostics (render fails only on OOM). */
      char *txt = sc_diags_render(&d, &p->ir, MAX_DIAG_LINES);
      st = txt ? sc_err_str(SCHEDC_EVERIFY, txt) : sc_err(SCHEDC_ENOMEM, "out of memory while verifying");
      free(txt);
    } else {
      sc_err(st, "out of memory while verifying");
    }
    sc_diags_free(&d);
    sc_ir_free(&p->ir);
    free(p);
    return st;
  }
  sc_diags_free(&d);
  if (sc_prog_build(&p->ir, &p->prog)) {
    schedc_plan_free(p);
    return sc_err(SCHEDC_ENOMEM, "out of memory lowering the plan");
  }
  p->hash = sc_ir_hash(&p->ir);
  /* Traffic per rank, in units of the whole buffer (each transfer moves 1/C of it). */
  uint32_t *sent = calloc(p->ir.nranks, sizeof *sent), *recv = calloc(p->ir.nranks, sizeof *recv);
  if (sent && recv) {
    uint32_t ms = 0, mr = 0;
    for (uint32_t i = 0; i < p->ir.nxfers; i++) {
      if (++sent[p->ir.xfers[i].src] > ms) ms = sent[p->ir.xfers[i].src];
      if (++recv[p->ir.xfers[i].dst] > mr) mr = recv[p->ir.xfers[i].dst];
    }
    p->max_sent = (double)ms / p->ir.nchunks;
    p->max_recv = (double)mr / p->ir.nchunks;
  }
  free(sent);
  free(recv);
  *out = p;
  return SCHEDC_OK;
}

schedc_status schedc_plan_from_script(const char *path, const schedc_load_opts *opts, schedc_plan **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!path) return sc_err(SCHEDC_EINVAL, "path is NULL");
  schedc_load_opts o = SCHEDC_LOAD_OPTS_INIT;
  if (opts) {
    if (opts->size < sizeof(size_t) || opts->size > sizeof o)
      return sc_err(SCHEDC_EINVAL, "opts->size is %zu; set it with SCHEDC_LOAD_OPTS_INIT", opts->size);
    memcpy(&o, opts, opts->size);
  }
  if (o.nranks < 0 || o.nnodes < 0 || o.ndefines < 0 || (o.ndefines && !o.defines))
    return sc_err(SCHEDC_EINVAL, "bad load options (negative count or NULL defines)");
  if (o.node_of) { /* a layout of ranks on nodes: every rank on a node, every node used */
    if (o.topology || o.nranks < 1 || o.nnodes < 1 || o.nnodes > o.nranks)
      return sc_err(SCHEDC_EINVAL, "opts->node_of needs nranks and nnodes (1 <= nnodes <= nranks) and no topology");
    char *used = calloc((size_t)o.nnodes, 1);
    if (!used) return sc_err(SCHEDC_ENOMEM, "out of memory");
    int bad = -1, nused = 0;
    for (int r = 0; r < o.nranks && bad < 0; r++) {
      if (o.node_of[r] < 0 || o.node_of[r] >= o.nnodes) bad = r;
      else if (!used[o.node_of[r]]++) nused++;
    }
    free(used);
    if (bad >= 0) return sc_err(SCHEDC_EINVAL, "opts->node_of[%d] is %d, not a node in [0, %d)", bad, o.node_of[bad], o.nnodes);
    if (nused != o.nnodes) return sc_err(SCHEDC_EINVAL, "opts->node_of leaves %d of the %d nodes without a rank", o.nnodes - nused, o.nnodes);
  }
  if (!(o.max_seconds >= 0 && o.max_seconds <= 86400)) /* NaN fails too */
    return sc_err(SCHEDC_EINVAL, "opts->max_seconds %g: use 0 (the default, 20 s) or seconds in (0, 86400]",
                  o.max_seconds);
  /* Names without a folder ("ring", "dgx_h100") are looked up (schedpath.h). A topology that
   * cannot be found is a bad option, as an invalid one is (EINVAL). */
  char file[PATH_MAX], topo[PATH_MAX];
  schedc_status fs = sc_find_file(path, NULL, SCHEDC_EIO, file, sizeof file);
  if (fs != SCHEDC_OK) return fs;
  path = file;
  if (o.topology) {
    if ((fs = sc_find_file(o.topology, "topologies", SCHEDC_EINVAL, topo, sizeof topo)) != SCHEDC_OK) return fs;
    o.topology = topo;
  }
  sc_dsl_opts d = {(uint32_t)o.nranks, (uint32_t)o.nnodes, o.topology, o.defines, o.ndefines,
                   o.max_instructions, o.max_memory, o.max_seconds, o.node_of};
  sc_ir ir;
  char *msg = NULL;
  int st = sc_dsl_load(path, &d, &ir, &msg);
  if (st != SCHEDC_OK) {
    sc_err_str((schedc_status)st, msg);
    free(msg);
    return (schedc_status)st;
  }
  return sc_plan_make(&ir, out);
}

schedc_status schedc_plan_save(const schedc_plan *plan, const char *path) {
  if (!plan || !path) return sc_err(SCHEDC_EINVAL, "plan or path is NULL");
  unsigned char *buf;
  size_t len;
  if (sc_planio_write(&plan->ir, &buf, &len)) return sc_err(SCHEDC_ENOMEM, "out of memory");
  schedc_status st = SCHEDC_OK;
  if (sc_write_atomic(path, buf, len)) st = sc_err(SCHEDC_EIO, "cannot write %s: %s", path, strerror(errno));
  free(buf);
  return st;
}

/* Reads exactly n bytes at the descriptor's position; 0, or -1 with errno set. */
static int read_full(int fd, void *buf, size_t n) {
  for (size_t got = 0; got < n;) {
    ssize_t k = read(fd, (char *)buf + got, n - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) { if (k == 0) errno = EIO; return -1; }
    got += (size_t)k;
  }
  return 0;
}

static schedc_status open_error(const char *why) { return sc_err(SCHEDC_EIO, "%s", why); }

schedc_status schedc_plan_load(const char *path, schedc_plan **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!path) return sc_err(SCHEDC_EINVAL, "path is NULL");
  /* a regular file (a FIFO or device is refused before it is read), and its header checked
   * before the rest is read: a big file that is not a plan of this version costs nothing */
  char why[512];
  unsigned long long size;
  int fd = sc_open_regular(path, ~0ull, &size, why, sizeof why);
  if (fd < 0) return open_error(why);
  unsigned char head[SC_PLAN_HEADER];
  size_t n = size < sizeof head ? (size_t)size : sizeof head;
  char err[256];
  if (read_full(fd, head, n)) {
    int e = errno;
    close(fd);
    return sc_err(SCHEDC_EIO, "cannot read %s: %s", path, strerror(e));
  }
  int st = sc_planio_check_header(head, n, size, err, sizeof err);
  if (st != SCHEDC_OK) {
    close(fd);
    return sc_err((schedc_status)st, "%s: %s", path, err);
  }
  size_t len = (size_t)size;
  unsigned char *buf = malloc(len + 1);
  if (!buf) {
    close(fd);
    return sc_err(SCHEDC_ENOMEM, "out of memory reading the %zu-byte plan file %s", len, path);
  }
  memcpy(buf, head, n);
  int rerr = read_full(fd, buf + n, len - n), e = errno;
  close(fd);
  if (rerr) {
    free(buf);
    return sc_err(SCHEDC_EIO, "cannot read %s: %s", path, strerror(e));
  }
  sc_ir ir;
  st = sc_planio_read(buf, len, &ir, err, sizeof err);
  free(buf);
  if (st != SCHEDC_OK) return sc_err((schedc_status)st, "%s: %s", path, err);
  return sc_plan_make(&ir, out);
}

void schedc_plan_free(schedc_plan *plan) {
  if (!plan) return;
  sc_prog_free(&plan->prog);
  sc_verified_free(&plan->v);
  sc_ir_free(&plan->ir);
  free(plan);
}

schedc_status schedc_plan_get_info(const schedc_plan *plan, schedc_plan_info *info) {
  if (!plan || !info) return sc_err(SCHEDC_EINVAL, "plan or info is NULL");
  if (info->size < sizeof(size_t) || info->size > sizeof *info)
    return sc_err(SCHEDC_EINVAL, "info->size is %zu; set it with SCHEDC_PLAN_INFO_INIT", info->size);
  schedc_plan_info i = SCHEDC_PLAN_INFO_INIT;
  const sc_ir *ir = &plan->ir;
  i.name = ir->name;
  i.source = ir->nfiles ? ir->files[0] : "";
  i.collective = (schedc_collective)ir->collective;
  i.nranks = (int)ir->nranks;
  i.nnodes = (int)ir->nnodes;
  i.nchunks = (int)ir->nchunks;
  i.root = (int)ir->root;
  i.nsteps = (int)ir->nsteps;
  i.ntransfers = (long)ir->nxfers;
  i.canonical = ir->order == SC_ORDER_CANONICAL;
  i.hash = plan->hash;
  i.max_sent = plan->max_sent;
  i.max_recv = plan->max_recv;
  size_t sz = info->size;
  memcpy(info, &i, sz);
  info->size = sz;
  return SCHEDC_OK;
}

schedc_status schedc_plan_transfer(const schedc_plan *plan, long i, schedc_transfer *out) {
  if (!plan || !out || i < 0 || (unsigned long)i >= plan->ir.nxfers)
    return sc_err(SCHEDC_EINVAL, "transfer index %ld out of range", i);
  const sc_xfer *x = &plan->ir.xfers[i];
  out->step = (int)x->step;
  out->kind = (schedc_xfer_kind)x->kind;
  out->src = (int)x->src;
  out->dst = (int)x->dst;
  out->chunk = (int)x->chunk;
  out->file = x->file < plan->ir.nfiles ? plan->ir.files[x->file] : "?";
  out->line = (int)x->line;
  return SCHEDC_OK;
}

long schedc_plan_order(const schedc_plan *plan, int chunk, int rank, char *buf, size_t cap) {
  if (!plan || chunk < 0 || rank < 0 || (uint32_t)chunk >= plan->ir.nchunks ||
      (uint32_t)rank >= plan->ir.nranks || (!buf && cap))
    return -1;
  uint32_t id = SC_TERM_UNDEF;
  if (sc_verify_cell_defined(&plan->ir, (uint32_t)rank, (uint32_t)chunk))
    id = plan->v.final[(size_t)rank * plan->ir.nchunks + (uint32_t)chunk];
  size_t len = sc_terms_print(&plan->v.terms, id, buf, cap);
  return len == SIZE_MAX ? -1 : (long)len; /* SIZE_MAX: out of memory */
}

int schedc_plan_chunk_holder(const schedc_plan *plan, int chunk) {
  if (!plan || chunk < 0 || (uint32_t)chunk >= plan->ir.nchunks) return -1;
  return (int)plan->v.holder[chunk];
}

schedc_status schedc_plan_open(const char *path, const schedc_load_opts *opts, schedc_plan **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  if (!path) return sc_err(SCHEDC_EINVAL, "path is NULL");
  char file[PATH_MAX];
  schedc_status fs = sc_find_file(path, NULL, SCHEDC_EIO, file, sizeof file);
  if (fs != SCHEDC_OK) return fs;
  path = file;
  /* Plan file or script? The first bytes say; the file must be a regular one (opened without
   * blocking, so a FIFO is refused instead of waiting for a writer). */
  char why[512];
  unsigned long long size;
  int fd = sc_open_regular(path, ~0ull, &size, why, sizeof why);
  if (fd < 0) return open_error(why);
  unsigned char head[64];
  size_t got = size < sizeof head ? (size_t)size : sizeof head;
  int rerr = read_full(fd, head, got), e = errno;
  close(fd);
  if (rerr) return sc_err(SCHEDC_EIO, "cannot read %s: %s", path, strerror(e));
  if (got < 8 || memcmp(head, SC_PLAN_MAGIC, 8) != 0) {
    /* A script is text; binary content is a damaged plan (or no schedc file at all), which Lua
     * would only call a syntax error. Lua's own binary chunks (ESC "Lua") keep Lua's message. */
    int binary = got > 0 && head[0] != 0x1b && memchr(head, 0, got) != NULL;
    int magic_prefix = got >= 4 && got < 8 && memcmp(head, SC_PLAN_MAGIC, got) == 0;
    if (binary || magic_prefix)
      return sc_err(SCHEDC_EPLAN, "%s: not a schedc plan file (it does not start with '%s', version %u) and not a "
                    "schedule script (%s)", path, SC_PLAN_MAGIC, SC_PLAN_VERSION,
                    binary ? "it holds binary data" : "it is a truncated plan header");
    return schedc_plan_from_script(path, opts, out);
  }
  schedc_status st = schedc_plan_load(path, out);
  if (st != SCHEDC_OK || !opts) return st;
  int want_r = opts->size >= offsetof(schedc_load_opts, nnodes) + sizeof(int) ? opts->nranks : 0;
  int want_n = opts->size >= offsetof(schedc_load_opts, topology) ? opts->nnodes : 0;
  if ((want_r && (uint32_t)want_r != (*out)->ir.nranks) || (want_n && (uint32_t)want_n != (*out)->ir.nnodes)) {
    st = sc_err(SCHEDC_EINVAL, "%s is a plan for %u ranks on %u nodes, not %d ranks%s", path, (*out)->ir.nranks,
                (*out)->ir.nnodes, want_r ? want_r : (int)(*out)->ir.nranks, want_n ? " with the given --nodes" : "");
    schedc_plan_free(*out);
    *out = NULL;
  }
  return st;
}
