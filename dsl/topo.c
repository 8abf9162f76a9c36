/*
 * topo.c — the topology a schedule sees as `topo` (nranks, nnodes, node_of, ranks_on,
 * local_rank; the levels are levels.c's) and the `params` table.
 * The topology comes from a topology file (a Lua chunk run in its own sandbox, returning
 * { levels = {...}, ranks = {...} } as `schedc topo -o` writes, or the older
 * { nodes = {{0,1,..}, ...} } / { nnodes = M, ranks_per_node = P }), from --nodes M (M equal
 * consecutive blocks, or the caller's node_of), or is one node holding every rank.
 */
#include <stdlib.h>
#include <string.h>

#include "dsl_int.h"

void sc_dsl_topo_free(sc_topo *t) {
  free(t->node_of);
  free(t->local_rank);
  free(t->node_first);
  free(t->by_node);
  free(t->levels);
  free(t->order);
  free(t->gid);
  free(t->ngroups);
  if (t->nic)
    for (uint32_t r = 0; r < t->nranks; r++) free(t->nic[r]);
  free(t->nic);
  memset(t, 0, sizeof *t);
}


/* Fill local_rank / node_first / by_node from node_of; ranks ascend within a node. */
static void topo_index(lua_State *L, sc_topo *t) {
  memset(t->node_first, 0, ((size_t)t->nnodes + 1) * sizeof *t->node_first);
  for (uint32_t r = 0; r < t->nranks; r++) t->node_first[t->node_of[r] + 1]++;
  for (uint32_t i = 0; i < t->nnodes; i++) {
    if (t->node_first[i + 1] == 0) luaL_error(L, "node %d of the topology has no ranks", (int)i);
    t->node_first[i + 1] += t->node_first[i];
  }
  uint32_t *cnt = calloc(t->nnodes, sizeof *cnt);
  if (!cnt) luaL_error(L, "not enough memory");
  for (uint32_t r = 0; r < t->nranks; r++) {
    uint32_t nd = t->node_of[r], k = cnt[nd]++;
    t->by_node[t->node_first[nd] + k] = r;
    t->local_rank[r] = k;
  }
  free(cnt);
}

/* Read the topology file's table (on top of the stack of the topology's own state). */
static void read_topo_table(lua_State *L, sc_topo *t, const char *path, uint32_t want_n) {
  if (lua_type(L, -1) != LUA_TTABLE)
    luaL_error(L, "%s: a topology file must return a table { levels = {...}, ranks = {...} }, "
                  "{ nodes = {{ranks...}, ...} } or { nnodes = M, ranks_per_node = P }", path);
  int has_nodes = lua_getfield(L, -1, "nodes") == LUA_TTABLE;
  lua_pop(L, 1);
  int has_ranks = lua_getfield(L, -1, "ranks") != LUA_TNIL;
  lua_pop(L, 1);
  if (has_ranks) {
    lua_getfield(L, -1, "nnodes");
    if (has_nodes || !lua_isnil(L, -1)) luaL_error(L, "%s: give either 'ranks' (with 'levels') or 'nodes' / 'nnodes', not both", path);
    lua_pop(L, 1);
    lua_getfield(L, -1, "ranks");
    if (!lua_istable(L, -1)) luaL_error(L, "%s: 'ranks' must be a list of { host = ..., ... } tables", path);
    lua_pop(L, 1);
    sc_dsl_topo_read_ranks(L, t, path, want_n);
    return;
  }
  if (!has_nodes) {
    lua_getfield(L, -1, "nnodes");
    lua_getfield(L, -2, "ranks_per_node");
    int ok1, ok2;
    lua_Integer m = lua_tointegerx(L, -2, &ok1), p = lua_tointegerx(L, -1, &ok2);
    if (!ok1 || !ok2 || m < 1 || p < 1 || m * p > (lua_Integer)SC_IR_MAX_RANKS)
      luaL_error(L, "%s: needs 'ranks' and 'levels' (as `schedc topo -o` writes), 'nodes' (a list of rank lists) "
                  "or integer 'nnodes' and 'ranks_per_node'", path);
    lua_pop(L, 2);
    sc_dsl_topo_alloc(L, t, (uint32_t)(m * p), (uint32_t)m);
    for (uint32_t r = 0; r < t->nranks; r++) t->node_of[r] = r / (uint32_t)p;
  } else {
    lua_getfield(L, -1, "nodes");
    lua_Integer m = (lua_Integer)lua_rawlen(L, -1), n = 0;
    if (m < 1) luaL_error(L, "%s: 'nodes' is empty", path);
    for (lua_Integer i = 1; i <= m; i++) {
      if (lua_rawgeti(L, -1, i) != LUA_TTABLE) luaL_error(L, "%s: nodes[%I] is not a list of ranks", path, i);
      n += (lua_Integer)lua_rawlen(L, -1);
      lua_pop(L, 1);
    }
    if (n < 1 || n > (lua_Integer)SC_IR_MAX_RANKS) luaL_error(L, "%s: %I ranks (must be 1..%d)", path, n, (int)SC_IR_MAX_RANKS);
    sc_dsl_topo_alloc(L, t, (uint32_t)n, (uint32_t)m);
    for (uint32_t r = 0; r < t->nranks; r++) t->node_of[r] = UINT32_MAX;
    for (lua_Integer i = 1; i <= m; i++) {
      lua_rawgeti(L, -1, i);
      lua_Integer k = (lua_Integer)lua_rawlen(L, -1);
      for (lua_Integer j = 1; j <= k; j++) {
        lua_rawgeti(L, -1, j);
        int ok;
        lua_Integer r = lua_tointegerx(L, -1, &ok);
        if (!ok || r < 0 || r >= n)
          luaL_error(L, "%s: nodes[%I][%I] is not a rank in [0, %I)", path, i, j, n);
        if (t->node_of[r] != UINT32_MAX) luaL_error(L, "%s: rank %I appears on two nodes", path, r);
        t->node_of[r] = (uint32_t)(i - 1);
        lua_pop(L, 1);
      }
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  if (want_n && want_n != t->nranks)
    luaL_error(L, "--ranks %d does not match the topology %s, which has %d ranks", (int)want_n, path, (int)t->nranks);
}

static int load_topo_file(lua_State *L) {
  /* Runs in the topology's own sandboxed state, protected. */
  sc_loader *ld = sc_dsl_loader(L);
  const char *path = lua_touserdata(L, 1);
  sc_dsl_open_safe(L);
  sc_dsl_lock_globals(L);
  int st = sc_dsl_loadfile(L, path);
  if (st != LUA_OK) return lua_error(L);
  lua_call(L, 0, 1);
  read_topo_table(L, &ld->topo, path, ld->opts.nranks);
  return 0;
}

static void build_topo(lua_State *L, sc_loader *ld) {
  sc_topo *t = &ld->topo;
  if (ld->opts.topology) {
    if (ld->opts.nnodes) luaL_error(L, "--nodes and --topology exclude each other");
    lua_State *T = sc_dsl_newstate(ld);
    if (!T) luaL_error(L, "not enough memory");
    lua_pushcfunction(T, load_topo_file);
    lua_pushlightuserdata(T, (void *)ld->opts.topology);
    int st = lua_pcall(T, 1, 0, 0);
    if (st != LUA_OK) {
      lua_pushstring(L, lua_type(T, -1) == LUA_TSTRING ? lua_tostring(T, -1) : "topology file failed");
      lua_close(T);
      lua_error(L);
    }
    lua_close(T);
  } else {
    uint32_t n = ld->opts.nranks, m = ld->opts.nnodes ? ld->opts.nnodes : 1;
    if (n < 1) luaL_error(L, "the rank count is missing (give --ranks N or a topology file)");
    if (n > SC_IR_MAX_RANKS) luaL_error(L, "--ranks %d exceeds the limit of %d", (int)n, (int)SC_IR_MAX_RANKS);
    if (ld->opts.node_of) { /* the caller's layout (plan.c checked it: every node used) */
      sc_dsl_topo_alloc(L, t, n, m);
      for (uint32_t r = 0; r < n; r++) t->node_of[r] = (uint32_t)ld->opts.node_of[r];
    } else {
      if (m > n || n % m) luaL_error(L, "--nodes %d does not divide %d ranks into equal nodes", (int)m, (int)n);
      sc_dsl_topo_alloc(L, t, n, m);
      for (uint32_t r = 0; r < n; r++) t->node_of[r] = r / (n / m);
    }
  }
  topo_index(L, t);
  if (!t->located) sc_dsl_topo_default_levels(L, t);
}


static int t_node_of(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  lua_pushinteger(L, t->node_of[sc_dsl_check_index(L, t->nranks, "rank")]);
  return 1;
}

static int t_local_rank(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  lua_pushinteger(L, t->local_rank[sc_dsl_check_index(L, t->nranks, "rank")]);
  return 1;
}

static int t_ranks_on(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  uint32_t nd = sc_dsl_check_index(L, t->nnodes, "node");
  uint32_t lo = t->node_first[nd], hi = t->node_first[nd + 1];
  lua_createtable(L, (int)(hi - lo), 0);
  for (uint32_t i = lo; i < hi; i++) {
    lua_pushinteger(L, t->by_node[i]);
    lua_rawseti(L, -2, (lua_Integer)(i - lo + 1));
  }
  return 1;
}

void sc_dsl_open_topo(lua_State *L) {
  sc_loader *ld = sc_dsl_loader(L);
  build_topo(L, ld);
  lua_pushinteger(L, ld->topo.nranks);
  lua_setglobal(L, "nranks");
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, ld->topo.nranks);
  lua_setfield(L, -2, "nranks");
  lua_pushinteger(L, ld->topo.nnodes);
  lua_setfield(L, -2, "nnodes");
  lua_pushcfunction(L, t_node_of);
  lua_setfield(L, -2, "node_of");
  lua_pushcfunction(L, t_ranks_on);
  lua_setfield(L, -2, "ranks_on");
  lua_pushcfunction(L, t_local_rank);
  lua_setfield(L, -2, "local_rank");
  sc_dsl_topo_open_levels(L, &ld->topo);
  lua_setglobal(L, "topo");
}

void sc_dsl_open_params(lua_State *L) {
  sc_loader *ld = sc_dsl_loader(L);
  lua_newtable(L);
  for (int i = 0; i < ld->opts.ndefines; i++) {
    const char *d = ld->opts.defines[i], *eq = strchr(d, '=');
    if (!eq || eq == d) luaL_error(L, "bad define '%s' (expected -D key=value)", d);
    lua_pushlstring(L, d, (size_t)(eq - d));
    const char *v = eq + 1;
    if (strcmp(v, "true") == 0) lua_pushboolean(L, 1);
    else if (strcmp(v, "false") == 0) lua_pushboolean(L, 0);
    else if (*v == 0 || lua_stringtonumber(L, v) == 0) lua_pushstring(L, v);
    lua_rawset(L, -3);
  }
  lua_setglobal(L, "params");
}
