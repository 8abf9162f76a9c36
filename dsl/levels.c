/*
 * levels.c — the levels of a topology (docs/topology.md): reading `levels` and `ranks` from a
 * topology file as `schedc topo -o` writes it (or the two default levels, host and rank), the
 * locality order of the ranks and the groups at each level, and the `topo` functions that read
 * them (levels, group_of, groups, near_nic, ring_order, level_between, crossings).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl_int.h"

/* The topology's rank arrays, for topo.c's node layouts and for the levels below (both read
 * them: they live here, below topo.c, so the two files call one way). */
void sc_dsl_topo_alloc(lua_State *L, sc_topo *t, uint32_t n, uint32_t m) {
  t->nranks = n;
  t->nnodes = m;
  t->node_of = calloc(n, sizeof *t->node_of);
  t->local_rank = calloc(n, sizeof *t->local_rank);
  t->node_first = calloc((size_t)m + 1, sizeof *t->node_first);
  t->by_node = calloc(n, sizeof *t->by_node);
  if (!t->node_of || !t->local_rank || !t->node_first || !t->by_node) luaL_error(L, "not enough memory");
}

/* Argument 1 as an index in [0, limit) ("rank", "node", ...): a bad one is the user's error. */
uint32_t sc_dsl_check_index(lua_State *L, uint32_t limit, const char *what) {
  int ok;
  lua_Integer v = lua_tointegerx(L, 1, &ok);
  if (!ok) sc_dsl_argerror(L, 1, "%s expected, got %s", what, luaL_typename(L, 1));
  if (v < 0 || v >= (lua_Integer)limit) sc_dsl_argerror(L, 1, "%s %I out of range [0, %d)", what, v, (int)limit);
  return (uint32_t)v;
}

static const char *const LINK_KINDS[] = {"shm", "nvlink", "pcie", "net", NULL};

/* ids: [nranks * nlevels] group ids (any integers) as the file gives them. Sort the ranks by
 * (ids, rank) into t->order (a merge sort: stable, O(n log n), no global state), then number
 * each level's groups in that order into t->gid. */
static int ids_less(const lua_Integer *ids, uint32_t nl, uint32_t a, uint32_t b) {
  for (uint32_t l = 0; l < nl; l++) {
    lua_Integer x = ids[(size_t)a * nl + l], y = ids[(size_t)b * nl + l];
    if (x != y) return x < y;
  }
  return a < b;
}

static void topo_order(lua_State *L, sc_topo *t, const lua_Integer *ids) {
  uint32_t n = t->nranks, nl = t->nlevels;
  t->order = malloc((size_t)n * sizeof *t->order);
  t->gid = malloc((size_t)n * nl * sizeof *t->gid);
  t->ngroups = calloc(nl, sizeof *t->ngroups);
  uint32_t *tmp = lua_newuserdatauv(L, (size_t)n * sizeof *tmp, 0);
  if (!t->order || !t->gid || !t->ngroups) luaL_error(L, "not enough memory");
  for (uint32_t r = 0; r < n; r++) t->order[r] = r;
  for (uint32_t w = 1; w < n; w *= 2) {
    for (uint32_t lo = 0; lo < n; lo += 2 * w) {
      uint32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = ids_less(ids, nl, t->order[j], t->order[i]) ? t->order[j++] : t->order[i++];
      while (i < mid) tmp[k++] = t->order[i++];
      while (j < hi) tmp[k++] = t->order[j++];
    }
    memcpy(t->order, tmp, (size_t)n * sizeof *tmp);
  }
  for (uint32_t i = 0; i < n; i++) {
    uint32_t r = t->order[i], p = i ? t->order[i - 1] : 0;
    int differ = i == 0;
    for (uint32_t l = 0; l < nl; l++) {
      differ |= i > 0 && ids[(size_t)r * nl + l] != ids[(size_t)p * nl + l];
      if (differ) t->ngroups[l]++;
      t->gid[(size_t)r * nl + l] = t->ngroups[l] - 1;
    }
  }
  lua_pop(L, 1);
}

/* levels = { { name = "host", kind = "net", gbps = 45, alpha_us = 8 }, ... } */
static void read_levels(lua_State *L, sc_topo *t, const char *path) {
  if (lua_getfield(L, -1, "levels") != LUA_TTABLE) luaL_error(L, "%s: 'ranks' needs 'levels' (a list of { name = ..., gbps = ..., alpha_us = ... }, outermost first)", path);
  lua_Integer nl = (lua_Integer)lua_rawlen(L, -1);
  if (nl < 1 || nl > 6) luaL_error(L, "%s: 'levels' has %I entries (1 to 6)", path, nl);
  t->nlevels = (uint32_t)nl;
  t->levels = calloc((size_t)nl, sizeof *t->levels);
  if (!t->levels) luaL_error(L, "not enough memory");
  for (lua_Integer i = 1; i <= nl; i++) {
    struct sc_topo_level *lv = &t->levels[i - 1];
    if (lua_rawgeti(L, -1, i) != LUA_TTABLE) luaL_error(L, "%s: levels[%I] is not a table { name = ..., ... }", path, i);
    lua_getfield(L, -1, "name");
    const char *nm = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    size_t len = nm ? strlen(nm) : 0;
    int ok = nm && len > 0 && len < sizeof lv->name;
    for (size_t k = 0; ok && k < len; k++) ok = (nm[k] >= 'a' && nm[k] <= 'z') || nm[k] == '_' || (k && nm[k] >= '0' && nm[k] <= '9');
    if (!ok) luaL_error(L, "%s: levels[%I].name must be a short lower-case name (host, numa, switch, nvlink, gpu, ...)", path, i);
    if (i == 1 && strcmp(nm, "host")) luaL_error(L, "%s: levels[1] must be \"host\" (the outermost level), not \"%s\"", path, nm);
    for (lua_Integer j = 0; j < i - 1; j++)
      if (!strcmp(t->levels[j].name, nm)) luaL_error(L, "%s: level \"%s\" is named twice", path, nm);
    if (!strcmp(nm, "nic")) luaL_error(L, "%s: \"nic\" cannot name a level (ranks[i].nic is the nearest NIC)", path);
    memcpy(lv->name, nm, len + 1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "kind");
    if (!lua_isnil(L, -1)) {
      const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "?";
      int found = 0;
      for (int j = 0; LINK_KINDS[j]; j++) found |= !strcmp(k, LINK_KINDS[j]);
      if (!found) luaL_error(L, "%s: levels[%I].kind '%s' (choose shm, nvlink, pcie or net)", path, i, k);
      snprintf(lv->kind, sizeof lv->kind, "%s", k);
    }
    lua_pop(L, 1);
    static const char *const nums[] = {"gbps", "alpha_us"};
    for (int q = 0; q < 2; q++) {
      lua_getfield(L, -1, nums[q]);
      double v = -1;
      if (!lua_isnil(L, -1)) {
        int isnum;
        v = lua_tonumberx(L, -1, &isnum);
        if (!isnum || !(v >= 0) || v > 1e12 || (q == 0 && v == 0))
          luaL_error(L, "%s: levels[%I].%s must be a number %s", path, i, nums[q], q ? ">= 0" : "> 0");
      }
      if (q == 0) lv->gbps = v; else lv->alpha_us = v;
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
}

/* ranks = { { host = 0, numa = 1, gpu = "0000:0f:00.0", nic = "mlx5_0" }, ... }: a group id
 * for every level, an optional nearest NIC. */
void sc_dsl_topo_read_ranks(lua_State *L, sc_topo *t, const char *path, uint32_t want_n) {
  read_levels(L, t, path);
  lua_getfield(L, -1, "ranks");
  lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
  if (n < 1 || n > (lua_Integer)SC_IR_MAX_RANKS) luaL_error(L, "%s: 'ranks' has %I entries (must be 1..%d)", path, n, (int)SC_IR_MAX_RANKS);
  uint32_t nl = t->nlevels;
  lua_Integer *ids = lua_newuserdatauv(L, (size_t)n * nl * sizeof *ids, 0);
  lua_insert(L, -2); /* keep it below the ranks table */
  uint32_t m_hosts = 0;
  t->nranks = (uint32_t)n;
  t->nic = calloc((size_t)n, sizeof *t->nic);
  if (!t->nic) luaL_error(L, "not enough memory");
  for (lua_Integer r = 0; r < n; r++) {
    if (lua_rawgeti(L, -1, r + 1) != LUA_TTABLE) luaL_error(L, "%s: ranks[%I] (rank %I) is not a table { host = ..., ... }", path, r + 1, r);
    for (uint32_t l = 0; l < nl; l++) {
      lua_getfield(L, -1, t->levels[l].name);
      int ok;
      lua_Integer v = lua_tointegerx(L, -1, &ok);
      if (!ok || v < -(1LL << 40) || v > (1LL << 40))
        luaL_error(L, "%s: ranks[%I] (rank %I) needs an integer '%s' (its group at that level)", path, r + 1, r, t->levels[l].name);
      ids[(size_t)r * nl + l] = v;
      lua_pop(L, 1);
    }
    if (lua_getfield(L, -1, "nic") != LUA_TNIL) {
      if (lua_type(L, -1) != LUA_TSTRING) luaL_error(L, "%s: ranks[%I].nic must be a string (the NIC's name)", path, r + 1);
      t->nic[r] = strdup(lua_tostring(L, -1));
      if (!t->nic[r]) luaL_error(L, "not enough memory");
    }
    lua_pop(L, 2);
  }
  lua_pop(L, 1);
  if (want_n && want_n != t->nranks)
    luaL_error(L, "--ranks %d does not match the topology %s, which has %d ranks", (int)want_n, path, (int)t->nranks);
  topo_order(L, t, ids);
  m_hosts = t->ngroups[0];
  sc_dsl_topo_alloc(L, t, t->nranks, m_hosts);
  for (uint32_t r = 0; r < t->nranks; r++) t->node_of[r] = t->gid[(size_t)r * nl];
  t->located = 1;
  lua_pop(L, 1); /* ids */
}

/* No levels in the file (or no file): "host" (the nodes) and "rank", in rank order. */
void sc_dsl_topo_default_levels(lua_State *L, sc_topo *t) {
  t->nlevels = 2;
  t->levels = calloc(2, sizeof *t->levels);
  t->nic = calloc(t->nranks, sizeof *t->nic);
  if (!t->levels || !t->nic) luaL_error(L, "not enough memory");
  strcpy(t->levels[0].name, "host");
  strcpy(t->levels[1].name, "rank");
  t->levels[0].gbps = t->levels[1].gbps = -1;
  t->levels[0].alpha_us = t->levels[1].alpha_us = -1;
  lua_Integer *ids = lua_newuserdatauv(L, (size_t)t->nranks * 2 * sizeof *ids, 0);
  for (uint32_t r = 0; r < t->nranks; r++) { ids[2 * r] = t->node_of[r]; ids[2 * r + 1] = r; }
  topo_order(L, t, ids);
  lua_pop(L, 1);
}

/* A level argument: its name or its 1-based index. */
static uint32_t check_level(lua_State *L, int arg) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  if (lua_type(L, arg) == LUA_TSTRING) {
    const char *nm = lua_tostring(L, arg);
    for (uint32_t l = 0; l < t->nlevels; l++) if (!strcmp(t->levels[l].name, nm)) return l;
    char names[128] = "";
    for (uint32_t l = 0; l < t->nlevels; l++) snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", l ? ", " : "", t->levels[l].name);
    sc_dsl_argerror(L, arg, "no level '%s' in this topology (levels: %s)", nm, names);
  }
  int ok;
  lua_Integer v = lua_tointegerx(L, arg, &ok);
  if (!ok) sc_dsl_argerror(L, arg, "level name or index expected, got %s", luaL_typename(L, arg));
  if (v < 1 || v > (lua_Integer)t->nlevels) sc_dsl_argerror(L, arg, "level %I out of range [1, %d]", v, (int)t->nlevels);
  return (uint32_t)(v - 1);
}

static int t_group_of(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  uint32_t r = sc_dsl_check_index(L, t->nranks, "rank"), l = check_level(L, 2);
  lua_pushinteger(L, t->gid[(size_t)r * t->nlevels + l]);
  return 1;
}

/* Groups at a level: an array of rank arrays, groups and their ranks in locality order. */
static int t_groups(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  uint32_t l = check_level(L, 1), ng = t->ngroups[l];
  lua_createtable(L, (int)ng, 0);
  for (uint32_t i = 0; i < t->nranks; i++) {
    uint32_t r = t->order[i], g = t->gid[(size_t)r * t->nlevels + l];
    if (lua_rawgeti(L, -1, (lua_Integer)g + 1) == LUA_TNIL) {
      lua_pop(L, 1);
      lua_newtable(L);
      lua_pushvalue(L, -1);
      lua_rawseti(L, -3, (lua_Integer)g + 1);
    }
    lua_pushinteger(L, r);
    lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
    lua_pop(L, 1);
  }
  return 1;
}

static int t_near_nic(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  uint32_t r = sc_dsl_check_index(L, t->nranks, "rank");
  if (t->nic && t->nic[r]) lua_pushstring(L, t->nic[r]);
  else lua_pushnil(L);
  return 1;
}

/* The ranks in locality order: sorted by their groups, outermost level first, so a ring over
 * it crosses each level's boundaries the fewest times (once per group). Rank order when the
 * topology says nothing below the nodes (no levels in the file). */
static int t_ring_order(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  lua_createtable(L, (int)t->nranks, 0);
  for (uint32_t i = 0; i < t->nranks; i++) {
    lua_pushinteger(L, t->located ? t->order[i] : i);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The outermost level at which ranks a and b are in different groups (its name), or nil. */
static int t_level_between(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  uint32_t a = sc_dsl_check_index(L, t->nranks, "rank");
  lua_remove(L, 1);
  uint32_t b = sc_dsl_check_index(L, t->nranks, "rank");
  for (uint32_t l = 0; l < t->nlevels; l++)
    if (t->gid[(size_t)a * t->nlevels + l] != t->gid[(size_t)b * t->nlevels + l]) {
      lua_pushstring(L, t->levels[l].name);
      return 1;
    }
  lua_pushnil(L);
  return 1;
}

/* Edges of the ring over `order` (an array of ranks, closed) that cross the level's boundary. */
static int t_crossings(lua_State *L) {
  sc_topo *t = &sc_dsl_loader(L)->topo;
  luaL_checktype(L, 1, LUA_TTABLE);
  uint32_t l = check_level(L, 2);
  lua_Integer n = (lua_Integer)lua_rawlen(L, 1), c = 0;
  for (lua_Integer i = 1; i <= n; i++) {
    lua_rawgeti(L, 1, i);
    lua_rawgeti(L, 1, i % n + 1);
    int ok1, ok2;
    lua_Integer a = lua_tointegerx(L, -2, &ok1), b = lua_tointegerx(L, -1, &ok2);
    if (!ok1 || !ok2 || a < 0 || b < 0 || a >= (lua_Integer)t->nranks || b >= (lua_Integer)t->nranks)
      sc_dsl_argerror(L, 1, "entry %I or the next is not a rank in [0, %d)", i, (int)t->nranks);
    c += t->gid[(size_t)a * t->nlevels + l] != t->gid[(size_t)b * t->nlevels + l];
    lua_pop(L, 2);
  }
  lua_pushinteger(L, c);
  return 1;
}

static void push_levels(lua_State *L, const sc_topo *t) {
  lua_createtable(L, (int)t->nlevels, 0);
  for (uint32_t l = 0; l < t->nlevels; l++) {
    lua_createtable(L, 0, 5);
    lua_pushstring(L, t->levels[l].name);
    lua_setfield(L, -2, "name");
    if (t->levels[l].kind[0]) { lua_pushstring(L, t->levels[l].kind); lua_setfield(L, -2, "kind"); }
    if (t->levels[l].gbps > 0) { lua_pushnumber(L, t->levels[l].gbps); lua_setfield(L, -2, "gbps"); }
    if (t->levels[l].alpha_us >= 0) { lua_pushnumber(L, t->levels[l].alpha_us); lua_setfield(L, -2, "alpha_us"); }
    lua_pushinteger(L, t->ngroups[l]);
    lua_setfield(L, -2, "ngroups");
    lua_rawseti(L, -2, (lua_Integer)l + 1);
  }
}

void sc_dsl_topo_open_levels(lua_State *L, const sc_topo *t) {
  static const luaL_Reg fns[] = {{"group_of", t_group_of}, {"groups", t_groups}, {"near_nic", t_near_nic},
                                 {"ring_order", t_ring_order}, {"level_between", t_level_between},
                                 {"crossings", t_crossings}, {NULL, NULL}};
  luaL_setfuncs(L, fns, 0);
  push_levels(L, t);
  lua_setfield(L, -2, "levels");
  lua_pushboolean(L, t->located);
  lua_setfield(L, -2, "located");
}
