/*
 * sandbox.c — the Lua state a schedule runs in: base, string, table, math and utf8 only (no
 * io, os, debug, package, load, dofile, string.dump, no finalizers, no pattern matching), a
 * memory cap (Lua's allocations and the IR's transfers), an instruction cap and a wall-clock
 * limit that no pcall can outlast, locked globals, and the helpers that put the user's
 * file:line on every error.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <lualib.h>

#include "dsl_int.h"

#define HOOK_EVERY 1000
#define MAX_REP ((lua_Integer)1 << 24) /* string.rep results: 16 MiB (time in C is not counted) */

sc_loader *sc_dsl_loader(lua_State *L) {
  void *ud;
  lua_getallocf(L, &ud);
  return (sc_loader *)ud;
}

double sc_dsl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *cap_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  sc_loader *ld = ud;
  size_t old = ptr ? osize : 0;
  if (nsize == 0) {
    ld->mem -= old;
    free(ptr);
    return NULL;
  }
  if (nsize > old && ld->mem - old + nsize + ld->ir_bytes > ld->mem_cap) {
    ld->mem_exceeded = 1;
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p) ld->mem = ld->mem - old + nsize;
  return p;
}

/* Every HOOK_EVERY instructions: the instruction cap and the wall-clock limit. Once either is
 * hit the limit is "tripped": from then on every thread that runs raises the same error at its
 * next instruction (the hook is re-armed with a count of 1), so a pcall that catches it, a loop
 * of pcalls or a coroutine cannot keep the script alive; the load reports the limit, whatever
 * error object finally reaches it. */
static void count_hook(lua_State *L, lua_Debug *ar) {
  sc_loader *ld = sc_dsl_loader(L);
  if (!ld->tripped) {
    ld->instr += HOOK_EVERY;
    int instr = ld->instr > ld->instr_cap;
    if (!instr && sc_dsl_now() <= ld->deadline) return;
    lua_getinfo(L, "Sl", ar);
    if (instr)
      snprintf(ld->limit_msg, sizeof ld->limit_msg, "%s:%d: instruction limit of %llu exceeded (an endless loop?)",
               ar->short_src, ar->currentline, (unsigned long long)ld->instr_cap);
    else
      snprintf(ld->limit_msg, sizeof ld->limit_msg, "%s:%d: time limit of %g s exceeded (an endless loop?; "
               "schedc_load_opts.max_seconds)", ar->short_src, ar->currentline, ld->opts.max_seconds);
    ld->tripped = 1;
  }
  lua_sethook(L, count_hook, LUA_MASKCOUNT, 1);
  lua_pushstring(L, ld->limit_msg);
  lua_error(L);
}

void sc_dsl_charge(lua_State *L, size_t bytes) {
  sc_loader *ld = sc_dsl_loader(L);
  ld->ir_bytes += bytes;
  if (ld->mem + ld->ir_bytes > ld->mem_cap) {
    ld->mem_exceeded = 1;
    sc_dsl_error(L, "memory limit of %d MiB exceeded (the schedule's transfers count against it)",
                 (int)(ld->mem_cap >> 20));
  }
}

/* setmetatable without finalizers: a __gc runs with hooks off (no limit could stop it) and at
 * lua_close, after the script's time is over. */
static int sb_setmetatable(lua_State *L) {
  if (lua_istable(L, 2) && lua_getfield(L, 2, "__gc") != LUA_TNIL)
    return sc_dsl_error(L, "finalizers (__gc) are not available in schedule files");
  lua_settop(L, 2);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, 2, 1);
  return 1;
}

/* string.rep with a bound on the result: time spent inside C functions is not counted by the
 * instruction hook, so the C functions a script can call must each be quick. */
static int sb_rep(lua_State *L) {
  size_t len;
  luaL_checklstring(L, 1, &len);
  lua_Integer n = luaL_checkinteger(L, 2);
  size_t seplen = 0;
  if (!lua_isnoneornil(L, 3)) luaL_checklstring(L, 3, &seplen);
  if (n > 0 && (len + seplen) > 0 && (lua_Integer)(len + seplen) > MAX_REP / n)
    return sc_dsl_argerror(L, 2, "string.rep result over %d MiB", (int)(MAX_REP >> 20));
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, 1);
  return 1;
}

/* Pattern matching backtracks without a time bound inside C: only plain find remains. */
static int sb_nopattern(lua_State *L) {
  return sc_dsl_error(L, "Lua patterns (string.match, gmatch, gsub, find without plain) are not available in "
                         "schedule files (their backtracking has no time bound); use string.find(s, text, 1, true)");
}
static int sb_find(lua_State *L) {
  if (!lua_toboolean(L, 4)) return sb_nopattern(L);
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_insert(L, 1);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* Replace tbl.name (table at the top of the stack) by f, with the original as its upvalue. */
static void wrap_field(lua_State *L, const char *name, lua_CFunction f) {
  lua_getfield(L, -1, name);
  lua_pushcclosure(L, f, 1);
  lua_setfield(L, -2, name);
}

/* print() goes to stderr so it never mixes with a command's output. */
static int sb_print(lua_State *L) {
  int n = lua_gettop(L);
  for (int i = 1; i <= n; i++) {
    size_t len;
    const char *s = luaL_tolstring(L, i, &len);
    if (i > 1) fputc('\t', stderr);
    fwrite(s, 1, len, stderr);
    lua_pop(L, 1);
  }
  fputc('\n', stderr);
  return 0;
}

static const luaL_Reg safe_libs[] = {
    {LUA_GNAME, luaopen_base},     {LUA_STRLIBNAME, luaopen_string}, {LUA_TABLIBNAME, luaopen_table},
    {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}, {NULL, NULL}};

static const char *const removed_globals[] = {"dofile", "loadfile", "load", "require", "collectgarbage",
                                              "rawlen", NULL};

lua_State *sc_dsl_newstate(sc_loader *ld) {
  lua_State *L = lua_newstate(cap_alloc, ld);
  if (!L) return NULL;
  return L;
}

void sc_dsl_open_safe(lua_State *L) {
  for (const luaL_Reg *lib = safe_libs; lib->func; lib++) {
    luaL_requiref(L, lib->name, lib->func, 1);
    lua_pop(L, 1);
  }
  for (const char *const *g = removed_globals; *g; g++) {
    lua_pushnil(L);
    lua_setglobal(L, *g);
  }
  lua_pushcfunction(L, sb_print);
  lua_setglobal(L, "print");
  lua_pushglobaltable(L);
  wrap_field(L, "setmetatable", sb_setmetatable);
  lua_pop(L, 1);
  lua_getglobal(L, LUA_STRLIBNAME); /* also the strings' __index: s:rep() is string.rep */
  lua_pushnil(L);
  lua_setfield(L, -2, "dump");
  wrap_field(L, "rep", sb_rep);
  wrap_field(L, "find", sb_find);
  static const char *const patterns[] = {"match", "gmatch", "gsub"};
  for (int i = 0; i < 3; i++) {
    lua_pushcfunction(L, sb_nopattern);
    lua_setfield(L, -2, patterns[i]);
  }
  lua_pop(L, 1);
  /* Deterministic math.random: a schedule must build the same transfers every run. */
  lua_getglobal(L, LUA_MATHLIBNAME);
  lua_getfield(L, -1, "randomseed");
  lua_pushinteger(L, 20260101);
  lua_call(L, 1, 0);
  lua_pop(L, 1);
  lua_sethook(L, count_hook, LUA_MASKCOUNT, HOOK_EVERY);
}

static int undefined_global(lua_State *L) {
  const char *k = lua_tostring(L, 2);
  return sc_dsl_error(L, "undefined global '%s'", k ? k : "?");
}

static int new_global(lua_State *L) {
  const char *k = lua_tostring(L, 2);
  return sc_dsl_error(L, "assignment to undeclared global '%s' (schedule files declare variables and "
                         "functions with 'local')", k ? k : "?");
}

void sc_dsl_lock_globals(lua_State *L) {
  lua_pushglobaltable(L);
  lua_newtable(L);
  lua_pushcfunction(L, undefined_global);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, new_global);
  lua_setfield(L, -2, "__newindex");
  lua_pushliteral(L, "locked");
  lua_setfield(L, -2, "__metatable");
  lua_setmetatable(L, -2);
  lua_pop(L, 1);
}

static int intern_file(lua_State *L, sc_loader *ld, const char *source) {
  const char *name = source[0] == '@' || source[0] == '=' ? source + 1 : source;
  int f = sc_ir_file(&ld->files, name);
  if (f < 0) luaL_error(L, "too many source files");
  return f;
}

void sc_dsl_where(lua_State *L, uint32_t *file, uint32_t *line) {
  sc_loader *ld = sc_dsl_loader(L);
  lua_Debug ar;
  for (int lvl = 1; lua_getstack(L, lvl, &ar); lvl++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    if (strncmp(ar.source, "=[schedc", 8) == 0) continue; /* library helper: blame its caller */
    if (ar.source != ld->last_src) {
      ld->last_file = intern_file(L, ld, ar.source);
      ld->last_src = ar.source;
    }
    *file = (uint32_t)ld->last_file;
    *line = (uint32_t)ar.currentline;
    return;
  }
  *file = 0;
  *line = 0;
}

static void push_where(lua_State *L) {
  lua_Debug ar;
  for (int lvl = 1; lua_getstack(L, lvl, &ar); lvl++) {
    if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
    if (strncmp(ar.source, "=[schedc", 8) == 0) continue;
    lua_pushfstring(L, "%s:%d: ", ar.short_src, ar.currentline);
    return;
  }
  lua_pushliteral(L, "");
}

int sc_dsl_error(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  push_where(L);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_concat(L, 2);
  return lua_error(L);
}

int sc_dsl_argerror(lua_State *L, int arg, const char *fmt, ...) {
  lua_Debug ar;
  const char *fname = "?";
  if (lua_getstack(L, 0, &ar)) {
    lua_getinfo(L, "n", &ar);
    if (ar.namewhat && strcmp(ar.namewhat, "method") == 0) arg--; /* do not count self */
    if (ar.name) fname = ar.name;
  }
  va_list ap;
  va_start(ap, fmt);
  push_where(L);
  lua_pushfstring(L, "bad argument #%d to '%s' (", arg, fname);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  lua_pushliteral(L, ")");
  lua_concat(L, 4);
  return lua_error(L);
}
