/*
 * api.c — the public schedc_topology_* functions: discovery, import (NCCL XML or hwloc XML,
 * told apart by the root element), synthetic machines, and writing the three formats.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "fileio.h"
#include "topology.h"
#include "xml.h"

struct schedc_topology { sc_tp *tp; };

static schedc_status wrap(sc_tp *tp, schedc_status st, schedc_topology **out) {
  if (st != SCHEDC_OK) { sc_tp_free(tp); return st; }
  schedc_topology *w = malloc(sizeof *w);
  if (!w) { sc_tp_free(tp); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  w->tp = tp;
  *out = w;
  return SCHEDC_OK;
}

schedc_status schedc_topology_discover(schedc_topology **out) {
  if (!out) return sc_err(SCHEDC_EINVAL, "out is NULL");
  *out = NULL;
  sc_tp *tp = sc_tp_new();
  if (!tp) return sc_err(SCHEDC_ENOMEM, "out of memory");
  return wrap(tp, sc_tp_discover(tp), out);
}

schedc_status schedc_topology_synthetic(const char *desc, schedc_topology **out) {
  if (!out || !desc) return sc_err(SCHEDC_EINVAL, "desc or out is NULL");
  *out = NULL;
  sc_tp *tp = sc_tp_new();
  if (!tp) return sc_err(SCHEDC_ENOMEM, "out of memory");
  return wrap(tp, sc_tp_synthetic(tp, desc), out);
}

schedc_status schedc_topology_import(const char *path, schedc_topology **out) {
  if (!out || !path) return sc_err(SCHEDC_EINVAL, "path or out is NULL");
  *out = NULL;
  char why[512];
  unsigned long long size;
  int fd = sc_open_regular(path, 64ull << 20, &size, why, sizeof why); /* no FIFO, no huge file */
  if (fd < 0) return sc_err(SCHEDC_EIO, "%s", why);
  close(fd);
  size_t len;
  char *text = sc_read_file(path, &len);
  if (!text) return sc_err(SCHEDC_EIO, "%s: cannot read it", path);
  char root[64];
  sc_xml_root(text, len, root, sizeof root);
  sc_tp *tp = sc_tp_new();
  if (!tp) { free(text); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  if (!strcmp(root, "topology")) {
    free(text);
    return wrap(tp, sc_tp_import_hwloc_xml(tp, path), out);
  }
  schedc_status st = sc_tp_import_nccl(tp, path, text, len); /* also reports what is wrong with anything else */
  free(text);
  return wrap(tp, st, out);
}

long schedc_topology_write(const schedc_topology *t, schedc_topology_format fmt, char *buf, size_t cap) {
  if (!t || (!buf && cap)) return -1;
  char *s = fmt == SCHEDC_TOPOLOGY_SUMMARY ? sc_tp_summary(t->tp) : fmt == SCHEDC_TOPOLOGY_JSON ? sc_tp_json(t->tp)
          : fmt == SCHEDC_TOPOLOGY_FILE ? sc_tp_lua(t->tp) : NULL;
  if (!s) return -1;
  size_t n = strlen(s);
  if (cap) {
    size_t k = n < cap - 1 ? n : cap - 1;
    memcpy(buf, s, k);
    buf[k] = 0;
  }
  free(s);
  return (long)n;
}

uint64_t schedc_topology_fingerprint(const schedc_topology *t) { return t ? sc_tp_fingerprint(t->tp) : 0; }
int schedc_topology_nranks(const schedc_topology *t) { return t ? t->tp->nranks : 0; }
void schedc_topology_free(schedc_topology *t) {
  if (!t) return;
  sc_tp_free(t->tp);
  free(t);
}
