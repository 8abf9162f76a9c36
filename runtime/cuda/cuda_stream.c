/*
 * cuda_stream.c — the public calls on any cuda communicator, whichever mode made it
 * (cuda_modes.h): its stream, waiting for its work (and seeing the kernels' failures), and the
 * conveniences for device memory of its rank's GPU.
 */
#include <pthread.h>
#include <stddef.h>

#include "cuda_group.h"
#include "cuda_modes.h"
#include "err.h"

static cu_group *group_of(schedc_comm *c) {
  return c && (c->be == &sc_cu_backend_one || c->be == &sc_cu_backend_proc) ? c->be_data : NULL;
}
/* The slot of comm's rank in its group. */
static int slot(const cu_group *g, const schedc_comm *c) { return g->me < 0 ? c->rank : 0; }

schedc_status schedc_cuda_set_stream(schedc_comm *c, void *stream) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_set_stream: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  int s = slot(g, c);
  g->stream[s] = stream ? stream : g->own_stream[s];
  pthread_mutex_unlock(&g->mu);
  return SCHEDC_OK;
}

schedc_status schedc_cuda_sync(schedc_comm *c) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_sync: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  schedc_status st = sc_cu_sync_all(g);
  if (st == SCHEDC_OK && !g->broken[0]) st = sc_cu_err_status(g, "cuda sync", NULL, NULL); /* broken: its own message says more */
  if (st != SCHEDC_OK) sc_cu_breaks(g, st);
  else if (g->broken[0]) st = sc_cu_broken(g, "cuda sync");
  pthread_mutex_unlock(&g->mu);
  return st;
}

schedc_status schedc_cuda_alloc(schedc_comm *c, size_t bytes, void **ptr) {
  cu_group *g = group_of(c);
  if (!ptr) return sc_err(SCHEDC_EINVAL, "schedc_cuda_alloc: ptr is NULL");
  *ptr = NULL;
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_alloc: comm is %s", c ? "not a cuda communicator" : "NULL");
  pthread_mutex_lock(&g->mu);
  schedc_status st = g->dv->select(g->dev[slot(g, c)]);
  if (st == SCHEDC_OK) st = g->dv->alloc(bytes, ptr);
  pthread_mutex_unlock(&g->mu);
  return st;
}

void schedc_cuda_free(schedc_comm *c, void *ptr) {
  cu_group *g = group_of(c);
  if (!g || !ptr) return;
  pthread_mutex_lock(&g->mu);
  if (g->dv->select(g->dev[slot(g, c)]) == SCHEDC_OK) g->dv->release(ptr);
  pthread_mutex_unlock(&g->mu);
}

schedc_status schedc_cuda_copy(schedc_comm *c, void *dst, const void *src, size_t bytes) {
  cu_group *g = group_of(c);
  if (!g) return sc_err(SCHEDC_EINVAL, "schedc_cuda_copy: comm is %s", c ? "not a cuda communicator" : "NULL");
  if (bytes && (!dst || !src)) return sc_err(SCHEDC_EINVAL, "schedc_cuda_copy: %s is NULL", dst ? "src" : "dst");
  pthread_mutex_lock(&g->mu);
  void *s = g->stream[slot(g, c)];
  schedc_status st = g->dv->select(g->dev[slot(g, c)]);
  if (st == SCHEDC_OK) st = g->dv->copy(dst, src, bytes, s);
  if (st == SCHEDC_OK) st = sc_cu_sync(g, s);
  pthread_mutex_unlock(&g->mu);
  return st;
}
