/*
 * links.c — the `links` table of a topology file, for the cost model: run the file in its own
 * sandbox (one protected call, like a schedule) and copy the numbers into a schedc_cost_model.
 * Unknown keys are errors that list the legal ones; kinds are "shm", "nvlink", "pcie", "net".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl_int.h"

static const char *const KINDS[] = {"shm", "nvlink", "pcie", "net", NULL};

static double num_field(lua_State *L, int t, const char *k, double dflt, const char *path, const char *where) {
  lua_getfield(L, t, k);
  double v = dflt;
  if (!lua_isnil(L, -1)) {
    int ok;
    v = lua_tonumberx(L, -1, &ok);
    if (!ok || v < 0) luaL_error(L, "%s: %s%s must be a number >= 0", path, where, k);
  }
  lua_pop(L, 1);
  return v;
}

static void check_keys(lua_State *L, int t, const char *const *legal, const char *path, const char *what) {
  lua_pushnil(L);
  while (lua_next(L, t)) {
    lua_pop(L, 1);
    const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    int ok = 0;
    for (int i = 0; k && legal[i]; i++) ok |= !strcmp(k, legal[i]);
    if (!ok) {
      char list[256] = "";
      for (int i = 0; legal[i]; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", legal[i]);
      luaL_error(L, "%s: unknown key '%s' in %s (keys: %s)", path, k ? k : "?", what, list);
    }
  }
}

static void read_link(lua_State *L, int t, const char *name, schedc_link *l, const char *path) {
  static const char *const keys[] = {"kind", "alpha_us", "gbps", "node_gbps", NULL};
  if (lua_getfield(L, t, name) == LUA_TNIL) { lua_pop(L, 1); return; }
  if (!lua_istable(L, -1)) luaL_error(L, "%s: links.%s must be a table { kind=, alpha_us=, gbps=, node_gbps= }", path, name);
  int lt = lua_gettop(L);
  char where[32];
  snprintf(where, sizeof where, "links.%s.", name);
  check_keys(L, lt, keys, path, where);
  if (lua_getfield(L, lt, "kind") != LUA_TNIL) {
    const char *k = lua_tostring(L, -1);
    int found = -1;
    for (int i = 0; k && KINDS[i]; i++) if (!strcmp(k, KINDS[i])) found = i;
    if (found < 0) luaL_error(L, "%s: links.%s.kind '%s' (choose shm, nvlink, pcie or net)", path, name, k ? k : "?");
    l->kind = (schedc_link_kind)found;
  }
  lua_pop(L, 1);
  l->alpha_us = num_field(L, lt, "alpha_us", l->alpha_us, path, where);
  l->gbps = num_field(L, lt, "gbps", l->gbps, path, where);
  l->node_gbps = num_field(L, lt, "node_gbps", l->node_gbps, path, where);
  if (l->gbps <= 0) luaL_error(L, "%s: links.%s.gbps must be > 0", path, name);
  lua_pop(L, 1);
}

typedef struct linkjob { const char *path; schedc_cost_model *m; } linkjob;

/* A topology file with levels and no `links` (docs/topology.md): between hosts the "host"
 * level's link; within a host the slowest inner level that has more than one group somewhere
 * (a ring or tree inside a host uses every inner boundary, and a step waits for its slowest
 * transfer). The levels table is on top of the stack; its checks are topo.c's. */
static void from_levels(lua_State *L, linkjob *j) {
  int t = lua_gettop(L);
  lua_Integer nl = (lua_Integer)lua_rawlen(L, t);
  schedc_cost_model *m = j->m;
  int have_intra = 0;
  for (lua_Integer i = 1; i <= nl; i++) {
    if (lua_rawgeti(L, t, i) != LUA_TTABLE) luaL_error(L, "%s: levels[%I] is not a table", j->path, i);
    int lt = lua_gettop(L);
    lua_getfield(L, lt, "name");
    int is_host = lua_type(L, -1) == LUA_TSTRING && !strcmp(lua_tostring(L, -1), "host");
    lua_pop(L, 1);
    schedc_link l = is_host ? m->inter : m->intra;
    char where[32];
    snprintf(where, sizeof where, "levels[%d].", (int)i);
    if (lua_getfield(L, lt, "kind") == LUA_TSTRING) {
      const char *k = lua_tostring(L, -1);
      for (int q = 0; KINDS[q]; q++) if (!strcmp(k, KINDS[q])) l.kind = (schedc_link_kind)q;
    }
    lua_pop(L, 1);
    l.alpha_us = num_field(L, lt, "alpha_us", l.alpha_us, j->path, where);
    l.gbps = num_field(L, lt, "gbps", l.gbps, j->path, where);
    if (l.gbps <= 0) luaL_error(L, "%s: levels[%d].gbps must be > 0", j->path, (int)i);
    l.node_gbps = 0;
    if (is_host) m->inter = l;
    else if (!have_intra || l.gbps < m->intra.gbps) { m->intra = l; have_intra = 1; }
    lua_pop(L, 1);
  }
  /* GPU links (nvlink, pcie): in-place collectives, no local copies; CPU (shm): two */
  if (m->intra.kind != SCHEDC_LINK_SHM) m->local_passes = 0;
  /* the device's numbers beside the levels (`schedc topo` writes them for GPUs) */
  m->reduce_gbps = num_field(L, t - 1, "reduce_gbps", m->reduce_gbps, j->path, "");
  m->copy_gbps = num_field(L, t - 1, "copy_gbps", m->copy_gbps, j->path, "");
  m->call_us = num_field(L, t - 1, "call_us", m->call_us, j->path, "");
  m->cores_per_node = (int)num_field(L, t - 1, "cores_per_node", m->cores_per_node, j->path, "");
  if (m->reduce_gbps <= 0 || m->copy_gbps <= 0) luaL_error(L, "%s: reduce_gbps and copy_gbps must be > 0", j->path);
}

static int load_links(lua_State *L) {
  linkjob *j = lua_touserdata(L, 1);
  static const char *const keys[] = {"intra", "inter", "reduce_gbps", "copy_gbps", "local_passes", "call_us",
                                     "cores_per_node", NULL};
  sc_dsl_open_safe(L);
  sc_dsl_lock_globals(L);
  if (sc_dsl_loadfile(L, j->path) != LUA_OK) return lua_error(L);
  lua_call(L, 0, 1);
  if (!lua_istable(L, -1)) luaL_error(L, "%s: a topology file must return a table", j->path);
  if (lua_getfield(L, -1, "links") != LUA_TTABLE) {
    lua_pop(L, 1);
    if (lua_getfield(L, -1, "levels") == LUA_TTABLE) { from_levels(L, j); return 0; }
    luaL_error(L, "%s: no 'links' table: the cost model needs links = { intra = {...}, inter = {...}, ... } "
                  "or the levels `schedc topo -o` writes (docs/tuning.md, docs/topology.md)", j->path);
  }
  int t = lua_gettop(L);
  check_keys(L, t, keys, j->path, "links");
  schedc_cost_model *m = j->m;
  read_link(L, t, "intra", &m->intra, j->path);
  read_link(L, t, "inter", &m->inter, j->path);
  m->reduce_gbps = num_field(L, t, "reduce_gbps", m->reduce_gbps, j->path, "links.");
  m->copy_gbps = num_field(L, t, "copy_gbps", m->copy_gbps, j->path, "links.");
  m->local_passes = num_field(L, t, "local_passes", m->local_passes, j->path, "links.");
  m->call_us = num_field(L, t, "call_us", m->call_us, j->path, "links.");
  m->cores_per_node = (int)num_field(L, t, "cores_per_node", m->cores_per_node, j->path, "links.");
  if (m->reduce_gbps <= 0 || m->copy_gbps <= 0) luaL_error(L, "%s: links.reduce_gbps and copy_gbps must be > 0", j->path);
  return 0;
}

int sc_dsl_load_links(const char *path, schedc_cost_model *m, char **err) {
  *err = NULL;
  sc_loader ld;
  memset(&ld, 0, sizeof ld);
  ld.path = path;
  ld.mem_cap = 64u << 20;
  ld.instr_cap = 100000000u;
  ld.last_file = -1;
  sc_ir_init(&ld.files);
  lua_State *L = sc_dsl_newstate(&ld);
  if (!L) { *err = strdup("not enough memory for the Lua state"); return SCHEDC_ENOMEM; }
  linkjob j = {path, m};
  lua_pushcfunction(L, load_links);
  lua_pushlightuserdata(L, &j);
  int st = lua_pcall(L, 1, 0, 0), status = SCHEDC_OK;
  if (st != LUA_OK) {
    const char *msg = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "topology file failed";
    *err = strdup(msg);
    status = strstr(msg, "cannot open") ? SCHEDC_EIO : SCHEDC_ESCRIPT;
  }
  lua_close(L);
  sc_ir_free(&ld.files);
  return status;
}
