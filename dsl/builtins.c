/*
 * builtins.c — the schedule language's constructor and objects (DESIGN.md §2):
 * schedule{...}, s:step(), st:reduce/copy(src, dst, chunk [, count]), s:reduce/copy (current
 * step). Every argument is checked at the call, with the user's file:line in the message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsl_int.h"
#include "fileio.h"

typedef sc_sched_ud sched_ud;
typedef struct step_ud { int b; uint32_t step; } step_ud;

static const char *const FIELDS = "collective, chunks, name, root, order";
static const char *const FIELD_LIST[] = {"collective", "chunks", "name", "root", "order", NULL};

static int known_field(const char *k) {
  for (const char *const *f = FIELD_LIST; *f; f++)
    if (strcmp(*f, k) == 0) return 1;
  return 0;
}

static sc_builder *check_sched(lua_State *L, const char *method) {
  sched_ud *u = luaL_testudata(L, 1, SC_SCHED_MT);
  if (!u) sc_dsl_error(L, "calling '%s' on bad self (write s:%s(...) with a colon, s a schedule)", method, method);
  return sc_dsl_loader(L)->b[u->b];
}

static int opt_field(lua_State *L, const char *k, int type) {
  int t = lua_getfield(L, 1, k);
  if (t == LUA_TNIL) { lua_pop(L, 1); return 0; }
  if (t != type)
    return sc_dsl_error(L, "bad field '%s' in schedule{} (%s expected, got %s)", k, lua_typename(L, type),
                        luaL_typename(L, -1));
  return 1;
}

static uint32_t int_field(lua_State *L, const char *k, lua_Integer lo, lua_Integer hi, uint32_t dflt) {
  if (!opt_field(L, k, LUA_TNUMBER)) return dflt;
  int isint;
  lua_Integer v = lua_tointegerx(L, -1, &isint);
  if (!isint) sc_dsl_error(L, "bad field '%s' in schedule{} (integer expected, got %s)", k, lua_tostring(L, -1));
  if (v < lo || v > hi)
    sc_dsl_error(L, "bad field '%s' in schedule{} (%I out of range [%I, %I])", k, v, lo, hi);
  lua_pop(L, 1);
  return (uint32_t)v;
}

static int l_schedule(lua_State *L) {
  sc_loader *ld = sc_dsl_loader(L);
  if (lua_type(L, 1) != LUA_TTABLE)
    return sc_dsl_argerror(L, 1, "table expected, got %s; write schedule{ collective = ..., chunks = ... }",
                           luaL_typename(L, 1));
  /* Unknown fields are errors: a typo must not silently fall back to a default. */
  lua_pushnil(L);
  while (lua_next(L, 1)) {
    const char *k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
    if (!k || !known_field(k))
      return sc_dsl_error(L, "unknown field '%s' in schedule{} (fields: %s)", k ? k : luaL_typename(L, -2), FIELDS);
    lua_pop(L, 1);
  }
  uint32_t n = ld->topo.nranks;
  int coll = SCHEDC_ALLREDUCE;
  if (opt_field(L, "collective", LUA_TSTRING)) {
    const char *c = lua_tostring(L, -1);
    coll = -1;
    for (int i = 0; i < SCHEDC_COLLECTIVE_COUNT_; i++)
      if (strcmp(c, sc_ir_collective_name(i)) == 0) coll = i;
    if (coll < 0)
      return sc_dsl_error(L, "bad field 'collective' in schedule{} ('%s' is not a collective; choose allreduce, "
                             "reduce_scatter, allgather, broadcast or reduce)", c);
    lua_pop(L, 1);
  }
  uint32_t chunks = int_field(L, "chunks", 1, SC_IR_MAX_CHUNKS, n);
  uint32_t root = int_field(L, "root", 0, (lua_Integer)n - 1, 0);
  int order = SC_ORDER_ANY;
  if (opt_field(L, "order", LUA_TSTRING)) {
    const char *o = lua_tostring(L, -1);
    if (strcmp(o, "canonical") == 0) order = SC_ORDER_CANONICAL;
    else if (strcmp(o, "any") != 0)
      return sc_dsl_error(L, "bad field 'order' in schedule{} ('%s'; choose \"canonical\" or \"any\")", o);
    lua_pop(L, 1);
  }
  if ((coll == SCHEDC_REDUCE_SCATTER || coll == SCHEDC_ALLGATHER) && chunks % n)
    return sc_dsl_error(L, "bad field 'chunks' in schedule{} (%s needs a multiple of nranks = %d, got %d)",
                        sc_ir_collective_name(coll), (int)n, (int)chunks);
  if ((uint64_t)chunks * n > SC_IR_MAX_CELLS)
    return sc_dsl_error(L, "bad field 'chunks' in schedule{} (%d chunks x %d ranks exceeds the limit of %d "
                           "cells)", (int)chunks, (int)n, (int)SC_IR_MAX_CELLS);
  const char *name = NULL;
  if (opt_field(L, "name", LUA_TSTRING)) name = lua_tostring(L, -1);

  sc_builder **nb = realloc(ld->b, (size_t)(ld->nb + 1) * sizeof *nb);
  if (!nb) return luaL_error(L, "not enough memory");
  ld->b = nb;
  sc_builder *b = calloc(1, sizeof *b);
  if (!b) return luaL_error(L, "not enough memory");
  ld->b[ld->nb++] = b; /* owned by the loader from here on, even if an error follows */
  sc_ir_init(&b->ir);
  b->ir.collective = coll;
  b->ir.order = order;
  b->ir.nranks = n;
  b->ir.nchunks = chunks;
  b->ir.root = root;
  b->ir.name = strdup(name ? name : "");
  if (!b->ir.name) return luaL_error(L, "not enough memory");
  uint32_t f, l;
  sc_dsl_where(L, &f, &l);
  b->ir.decl_file = (uint16_t)f;
  b->ir.decl_line = l;
  sched_ud *u = lua_newuserdatauv(L, sizeof *u, 0);
  u->b = ld->nb - 1;
  luaL_setmetatable(L, SC_SCHED_MT);
  return 1;
}

static uint32_t check_rank(lua_State *L, int arg, const sc_ir *ir) {
  int isint;
  lua_Integer v = lua_tointegerx(L, arg, &isint);
  if (!isint) {
    if (lua_isnumber(L, arg)) sc_dsl_argerror(L, arg, "rank %s is not an integer", lua_tostring(L, arg));
    sc_dsl_argerror(L, arg, "rank expected, got %s", luaL_typename(L, arg));
  }
  if (v < 0 || v >= (lua_Integer)ir->nranks)
    sc_dsl_argerror(L, arg, "rank %I out of range [0, %d)", v, (int)ir->nranks);
  return (uint32_t)v;
}

/* (src, dst, chunk [, count]) at stack index `a`; adds count transfers to step `step`. */
static int add_xfers(lua_State *L, sc_builder *b, uint32_t step, int a, int kind) {
  sc_ir *ir = &b->ir;
  uint32_t src = check_rank(L, a, ir), dst = check_rank(L, a + 1, ir);
  int isint;
  lua_Integer c = lua_tointegerx(L, a + 2, &isint);
  if (!isint) {
    if (lua_isnumber(L, a + 2)) return sc_dsl_argerror(L, a + 2, "chunk %s is not an integer", lua_tostring(L, a + 2));
    return sc_dsl_argerror(L, a + 2, "chunk expected, got %s", luaL_typename(L, a + 2));
  }
  if (c < 0 || c >= (lua_Integer)ir->nchunks)
    return sc_dsl_argerror(L, a + 2, "chunk %I out of range [0, %d)", c, (int)ir->nchunks);
  lua_Integer count = 1;
  if (!lua_isnoneornil(L, a + 3)) {
    count = lua_tointegerx(L, a + 3, &isint);
    if (!isint || count < 1 || count > (lua_Integer)ir->nchunks - c) /* no c + count: it may overflow */
      return sc_dsl_argerror(L, a + 3, "chunk count %s out of range [1, %d] from chunk %I",
                             luaL_tolstring(L, a + 3, NULL), (int)(ir->nchunks - c), c);
  }
  if (!lua_isnone(L, a + 4)) return sc_dsl_argerror(L, a + 4, "too many arguments (src, dst, chunk [, count])");
  if (src == dst)
    return sc_dsl_argerror(L, a + 1, "rank %d cannot %s to itself", (int)dst, kind == SCHEDC_XFER_COPY ? "copy" : "reduce");
  sc_xfer x = {.src = src, .dst = dst, .step = step, .kind = (uint8_t)kind};
  uint32_t f;
  sc_dsl_where(L, &f, &x.line);
  x.file = (uint16_t)f;
  sc_dsl_charge(L, (size_t)count * sizeof(sc_xfer));
  for (lua_Integer i = 0; i < count; i++) {
    x.chunk = (uint32_t)(c + i);
    if (sc_ir_add(ir, &x)) return sc_dsl_error(L, "too many transfers (limit %d) or out of memory", (int)SC_IR_MAX_XFERS);
  }
  lua_settop(L, 1);
  return 1; /* returns the step or schedule, so calls can be chained */
}

static int s_step(lua_State *L) {
  sc_builder *b = check_sched(L, "step");
  int u = ((sched_ud *)lua_touserdata(L, 1))->b;
  if (b->ir.nsteps >= UINT32_MAX / 2) return sc_dsl_error(L, "too many steps");
  step_ud *st = lua_newuserdatauv(L, sizeof *st, 0);
  st->b = u;
  st->step = b->ir.nsteps++;
  luaL_setmetatable(L, SC_STEP_MT);
  return 1;
}

static int s_xfer(lua_State *L, int kind, const char *name) {
  sc_builder *b = check_sched(L, name);
  if (b->ir.nsteps == 0) b->ir.nsteps = 1; /* the first transfer opens step 0 */
  return add_xfers(L, b, b->ir.nsteps - 1, 2, kind);
}
static int s_reduce(lua_State *L) { return s_xfer(L, SCHEDC_XFER_REDUCE, "reduce"); }
static int s_copy(lua_State *L) { return s_xfer(L, SCHEDC_XFER_COPY, "copy"); }

static int st_xfer(lua_State *L, int kind, const char *name) {
  step_ud *st = luaL_testudata(L, 1, SC_STEP_MT);
  if (!st) return sc_dsl_error(L, "calling '%s' on bad self (write st:%s(...) with a colon, st a step)", name, name);
  return add_xfers(L, sc_dsl_loader(L)->b[st->b], st->step, 2, kind);
}
static int st_reduce(lua_State *L) { return st_xfer(L, SCHEDC_XFER_REDUCE, "reduce"); }
static int st_copy(lua_State *L) { return st_xfer(L, SCHEDC_XFER_COPY, "copy"); }

/* Field reads: methods first, then read-only properties; anything else is an error. */
static int s_index(lua_State *L) {
  const sc_ir *ir = &sc_dsl_loader(L)->b[((sched_ud *)lua_touserdata(L, 1))->b]->ir;
  const char *k = luaL_checkstring(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (!strcmp(k, "nranks")) lua_pushinteger(L, ir->nranks);
  else if (!strcmp(k, "chunks")) lua_pushinteger(L, ir->nchunks);
  else if (!strcmp(k, "root")) lua_pushinteger(L, ir->root);
  else if (!strcmp(k, "nsteps")) lua_pushinteger(L, ir->nsteps);
  else if (!strcmp(k, "collective")) lua_pushstring(L, sc_ir_collective_name(ir->collective));
  else if (!strcmp(k, "name")) lua_pushstring(L, ir->name);
  else if (!strcmp(k, "order")) lua_pushstring(L, ir->order == SC_ORDER_CANONICAL ? "canonical" : "any");
  else return sc_dsl_error(L, "schedule has no field '%s' (methods: step, reduce, copy; fields: nranks, chunks, "
                              "root, nsteps, collective, name, order)", k);
  return 1;
}

static int st_index(lua_State *L) {
  step_ud *st = lua_touserdata(L, 1);
  const char *k = luaL_checkstring(L, 2);
  lua_pushvalue(L, 2);
  if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL) return 1;
  if (!strcmp(k, "index")) { lua_pushinteger(L, st->step); return 1; }
  return sc_dsl_error(L, "step has no field '%s' (methods: reduce, copy; field: index)", k);
}

static int no_newindex(lua_State *L) {
  return sc_dsl_error(L, "cannot set field '%s' of a %s", luaL_tolstring(L, 2, NULL),
                      luaL_testudata(L, 1, SC_SCHED_MT) ? "schedule" : "step");
}

static int s_tostring(lua_State *L) {
  const sc_ir *ir = &sc_dsl_loader(L)->b[((sched_ud *)lua_touserdata(L, 1))->b]->ir;
  lua_pushfstring(L, "schedule(%s, %d ranks, %d chunks, %d steps)", sc_ir_collective_name(ir->collective),
                  (int)ir->nranks, (int)ir->nchunks, (int)ir->nsteps);
  return 1;
}

static void make_mt(lua_State *L, const char *name, const luaL_Reg *methods, lua_CFunction index) {
  luaL_newmetatable(L, name);
  lua_newtable(L);
  luaL_setfuncs(L, methods, 0);
  lua_pushcclosure(L, index, 1);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, no_newindex);
  lua_setfield(L, -2, "__newindex");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
}

int sc_dsl_loadfile(lua_State *L, const char *path) {
  char why[512];
  unsigned long long size;
  int fd = sc_open_regular(path, SC_DSL_MAX_FILE, &size, why, sizeof why);
  if (fd < 0) {
    lua_pushstring(L, why);
    return LUA_ERRFILE;
  }
  close(fd); /* Lua opens it again by name: the type was the question (a swap in between is the user's) */
  return luaL_loadfilex(L, path, "t");
}

void sc_dsl_open_builtins(lua_State *L) {
  static const luaL_Reg s_methods[] = {{"step", s_step}, {"reduce", s_reduce}, {"copy", s_copy}, {NULL, NULL}};
  static const luaL_Reg st_methods[] = {{"reduce", st_reduce}, {"copy", st_copy}, {NULL, NULL}};
  make_mt(L, SC_SCHED_MT, s_methods, s_index);
  lua_pushcfunction(L, s_tostring);
  lua_setfield(L, -2, "__tostring");
  lua_pop(L, 1);
  make_mt(L, SC_STEP_MT, st_methods, st_index);
  lua_pop(L, 1);
  lua_pushcfunction(L, l_schedule);
  lua_setglobal(L, "schedule");
}
