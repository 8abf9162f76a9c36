/*
 * planio.c — writing and strictly reading plan files (see planio.h).
 */
#include "planio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct wbuf { unsigned char *p; size_t len, cap; int oom; } wbuf;

static void wput(wbuf *w, const void *src, size_t n) {
  if (w->oom) return;
  if (w->len + n > w->cap) {
    size_t ncap = w->cap ? w->cap : 1024;
    while (ncap < w->len + n) ncap *= 2;
    unsigned char *np = realloc(w->p, ncap);
    if (!np) { w->oom = 1; return; }
    w->p = np;
    w->cap = ncap;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void w32(wbuf *w, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
  wput(w, b, 4);
}

static void w64(wbuf *w, uint64_t v) {
  w32(w, (uint32_t)v);
  w32(w, (uint32_t)(v >> 32));
}

static void wstr(wbuf *w, const char *s) {
  size_t n = strlen(s);
  w32(w, (uint32_t)n);
  wput(w, s, n);
}

int sc_planio_write(const sc_ir *ir, unsigned char **buf, size_t *len) {
  wbuf w = {0};
  wput(&w, SC_PLAN_MAGIC, 8);
  w32(&w, SC_PLAN_VERSION);
  w32(&w, 0);
  w64(&w, 0); /* payload length, patched below */
  size_t start = w.len;
  uint32_t hdr[] = {(uint32_t)ir->collective, (uint32_t)ir->order, ir->nranks, ir->nchunks, ir->root,
                    ir->nnodes, ir->nsteps, ir->nxfers, ir->nfiles, ir->decl_file, ir->decl_line};
  for (size_t i = 0; i < sizeof hdr / sizeof hdr[0]; i++) w32(&w, hdr[i]);
  wstr(&w, ir->name ? ir->name : "");
  for (uint32_t i = 0; i < ir->nfiles; i++) wstr(&w, ir->files[i]);
  for (uint32_t r = 0; r < ir->nranks; r++) w32(&w, ir->node_of ? ir->node_of[r] : 0);
  for (uint32_t s = 0; s <= ir->nsteps; s++) w32(&w, ir->step_off[s]);
  for (uint32_t i = 0; i < ir->nxfers; i++) {
    const sc_xfer *x = &ir->xfers[i];
    uint32_t f[] = {x->src, x->dst, x->chunk, x->step, x->line, x->file, x->kind};
    for (size_t k = 0; k < 7; k++) w32(&w, f[k]);
  }
  if (w.oom) { free(w.p); return -1; }
  uint64_t plen = w.len - start;
  for (int i = 0; i < 8; i++) w.p[16 + i] = (unsigned char)(plen >> (8 * i));
  w64(&w, sc_fnv(SC_FNV_INIT, w.p, w.len));
  if (w.oom) { free(w.p); return -1; }
  *buf = w.p;
  *len = w.len;
  return 0;
}

typedef struct rbuf { const unsigned char *p; size_t len, off; int bad; } rbuf;

static uint32_t r32(rbuf *r) {
  if (r->bad || r->len - r->off < 4) { r->bad = 1; return 0; }
  const unsigned char *b = r->p + r->off;
  r->off += 4;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t r64(rbuf *r) {
  uint64_t lo = r32(r);
  return lo | (uint64_t)r32(r) << 32;
}

static char *rstr(rbuf *r) {
  uint32_t n = r32(r);
  if (r->bad || n > 1u << 20 || r->len - r->off < n) { r->bad = 1; return NULL; }
  char *s = malloc((size_t)n + 1);
  if (!s) { r->bad = 1; return NULL; }
  memcpy(s, r->p + r->off, n);
  s[n] = 0;
  r->off += n;
  return s;
}

#define FAIL(code, ...) do { snprintf(err, errcap, __VA_ARGS__); rc = (code); goto fail; } while (0)

int sc_planio_check_header(const unsigned char *head, size_t n, unsigned long long file_size, char *err,
                           size_t errcap) {
  if (n < 8 || memcmp(head, SC_PLAN_MAGIC, 8) != 0) {
    snprintf(err, errcap, "not a schedc plan file (bad magic)");
    return SCHEDC_EPLAN;
  }
  if (n < SC_PLAN_HEADER || file_size < SC_PLAN_HEADER + 8) {
    snprintf(err, errcap, "plan file is truncated (%llu bytes)", file_size);
    return SCHEDC_EPLAN;
  }
  rbuf r = {head, n, 8, 0};
  uint32_t ver = r32(&r);
  if (ver != SC_PLAN_VERSION) {
    snprintf(err, errcap, "plan file version %u is not supported (this build reads version %u); recompile it "
             "with 'schedc compile'", ver, SC_PLAN_VERSION);
    return SCHEDC_EVERSION;
  }
  (void)r32(&r);
  uint64_t plen = r64(&r);
  if (plen != file_size - SC_PLAN_HEADER - 8) {
    snprintf(err, errcap, "plan file is truncated or has trailing bytes (%llu bytes)", file_size);
    return SCHEDC_EPLAN;
  }
  if (file_size > SC_PLAN_MAX_BYTES) {
    snprintf(err, errcap, "plan file is %llu bytes, more than any plan can be (%llu)", file_size, SC_PLAN_MAX_BYTES);
    return SCHEDC_EPLAN;
  }
  return SCHEDC_OK;
}

int sc_planio_read(const unsigned char *buf, size_t len, sc_ir *ir, char *err, size_t errcap) {
  int rc = SCHEDC_EPLAN;
  sc_ir_init(ir);
  if ((rc = sc_planio_check_header(buf, len, len, err, errcap)) != SCHEDC_OK) goto fail;
  rc = SCHEDC_EPLAN;
  rbuf r = {buf, len, SC_PLAN_HEADER, 0};
  uint64_t want = sc_fnv(SC_FNV_INIT, buf, len - 8);
  rbuf tail = {buf, len, len - 8, 0};
  if (r64(&tail) != want) FAIL(SCHEDC_EPLAN, "plan file is corrupted (content hash mismatch)");
  r.len = len - 8;
  uint32_t h[11];
  for (int i = 0; i < 11; i++) h[i] = r32(&r);
  ir->collective = (int)h[0];
  ir->order = (int)h[1];
  ir->nranks = h[2];
  ir->nchunks = h[3];
  ir->root = h[4];
  ir->nnodes = h[5];
  ir->nsteps = h[6];
  ir->nxfers = ir->xcap = h[7];
  uint32_t nfiles = h[8];
  ir->decl_file = (uint16_t)h[9];
  ir->decl_line = h[10];
  if (r.bad || ir->nranks < 1 || ir->nranks > SC_IR_MAX_RANKS || ir->nxfers > SC_IR_MAX_XFERS ||
      nfiles > SC_IR_MAX_FILES || nfiles < 1 || ir->nsteps > ir->nxfers + (1u << 20) ||
      (uint64_t)ir->nxfers * 28 > r.len || ir->nnodes < 1 || ir->nnodes > ir->nranks)
    FAIL(SCHEDC_EPLAN, "plan file header is inconsistent");
  if (!(ir->name = rstr(&r))) FAIL(SCHEDC_EPLAN, "plan file is malformed (name)");
  ir->files = calloc(nfiles, sizeof *ir->files);
  ir->node_of = malloc((size_t)ir->nranks * sizeof *ir->node_of);
  ir->step_off = malloc(((size_t)ir->nsteps + 1) * sizeof *ir->step_off);
  ir->xfers = malloc((size_t)ir->nxfers * sizeof *ir->xfers + 1);
  if (!ir->files || !ir->node_of || !ir->step_off || !ir->xfers) FAIL(SCHEDC_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < nfiles; i++) {
    if (!(ir->files[i] = rstr(&r))) FAIL(SCHEDC_EPLAN, "plan file is malformed (file names)");
    ir->nfiles = i + 1;
  }
  for (uint32_t k = 0; k < ir->nranks; k++)
    if ((ir->node_of[k] = r32(&r)) >= ir->nnodes) r.bad = 1;
  for (uint32_t s = 0; s <= ir->nsteps; s++) {
    ir->step_off[s] = r32(&r);
    if (s && ir->step_off[s] < ir->step_off[s - 1]) r.bad = 1;
  }
  if (ir->step_off[0] != 0 || ir->step_off[ir->nsteps] != ir->nxfers) r.bad = 1;
  for (uint32_t i = 0; i < ir->nxfers && !r.bad; i++) {
    sc_xfer *x = &ir->xfers[i];
    x->src = r32(&r); x->dst = r32(&r); x->chunk = r32(&r); x->step = r32(&r); x->line = r32(&r);
    uint32_t f = r32(&r), kind = r32(&r);
    if (f >= nfiles || kind > 1 || x->step >= ir->nsteps || i < ir->step_off[x->step] ||
        i >= ir->step_off[x->step + 1])
      r.bad = 1;
    x->file = (uint16_t)f;
    x->kind = (uint8_t)kind;
    x->pad_ = 0;
  }
  if (r.bad || r.off != r.len) FAIL(SCHEDC_EPLAN, "plan file is malformed (transfers)");
  return SCHEDC_OK;
fail:
  sc_ir_free(ir);
  return rc;
}
