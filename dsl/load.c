/*
 * load.c — sc_dsl_load: runs a schedule script in a fresh sandbox under one protected call
 * (like lua.c's pmain, so even set-up errors are caught), then copies the returned schedule
 * into the IR and closes the state: nothing of Lua survives the load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dsl_int.h"

#define DEFAULT_MAX_INSTR 1000000000ull
#define DEFAULT_MAX_MEM ((size_t)1 << 30)
#define DEFAULT_MAX_SECONDS 20.0

static int pmain(lua_State *L) {
  sc_loader *ld = sc_dsl_loader(L);
  sc_dsl_open_safe(L);
  ld->status = SCHEDC_EINVAL; /* topology / params problems are bad options */
  sc_dsl_open_topo(L);
  sc_dsl_open_params(L);
  sc_dsl_open_builtins(L);
  sc_dsl_lock_globals(L);
  ld->status = SCHEDC_ESCRIPT;
  if (sc_ir_file(&ld->files, ld->path) != 0) return luaL_error(L, "not enough memory");
  int st = sc_dsl_loadfile(L, ld->path);
  if (st != LUA_OK) {
    if (st == LUA_ERRFILE) ld->status = SCHEDC_EIO;
    const char *m = lua_tostring(L, -1);
    if (m && !strstr(m, ld->path)) return luaL_error(L, "%s: %s", ld->path, m); /* name the file */
    return lua_error(L);
  }
  lua_call(L, 0, 1);
  sc_sched_ud *u = luaL_testudata(L, -1, SC_SCHED_MT);
  if (!u)
    return luaL_error(L, "%s: a schedule file must end with 'return s', s made by schedule{...} (it returned %s)",
                      ld->path, luaL_typename(L, -1));
  ld->result = u->b;
  return 0;
}

static char *dupmsg(const char *s) {
  char *m = strdup(s ? s : "unknown error");
  return m;
}

static const char *basename_noext(const char *path, char *buf, size_t cap) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  snprintf(buf, cap, "%s", b);
  char *dot = strrchr(buf, '.');
  if (dot && dot != buf) *dot = 0;
  return buf;
}

int sc_dsl_load(const char *path, const sc_dsl_opts *opts, sc_ir *ir, char **err) {
  *err = NULL;
  sc_ir_init(ir);
  sc_loader ld;
  memset(&ld, 0, sizeof ld);
  ld.path = path;
  ld.opts = *opts;
  ld.mem_cap = opts->max_memory ? opts->max_memory : DEFAULT_MAX_MEM;
  ld.instr_cap = opts->max_instructions ? opts->max_instructions : DEFAULT_MAX_INSTR;
  if (!(ld.opts.max_seconds > 0)) ld.opts.max_seconds = DEFAULT_MAX_SECONDS; /* also NaN */
  ld.deadline = sc_dsl_now() + ld.opts.max_seconds;
  ld.last_file = -1;
  sc_ir_init(&ld.files);
  int status = SCHEDC_OK;
  lua_State *L = sc_dsl_newstate(&ld);
  if (!L) { *err = dupmsg("not enough memory for the Lua state"); return SCHEDC_ENOMEM; }
  lua_pushcfunction(L, pmain);
  int st = lua_pcall(L, 0, 0, 0);
  if (st != LUA_OK) {
    status = ld.status ? ld.status : SCHEDC_ESCRIPT;
    if (ld.tripped) {
      *err = dupmsg(ld.limit_msg); /* whatever error object the script's handlers left */
      status = SCHEDC_ESCRIPT;
    } else if (st == LUA_ERRMEM && ld.mem_exceeded) {
      char buf[512];
      snprintf(buf, sizeof buf, "%s: memory limit of %zu MiB exceeded", path, ld.mem_cap >> 20);
      *err = dupmsg(buf);
    } else if (st == LUA_ERRMEM) {
      *err = dupmsg("not enough memory");
      status = SCHEDC_ENOMEM;
    } else if (lua_type(L, -1) == LUA_TSTRING) {
      *err = dupmsg(lua_tostring(L, -1));
    } else {
      char buf[512];
      snprintf(buf, sizeof buf, "%s: error object is a %s value", path, luaL_typename(L, -1));
      *err = dupmsg(buf);
    }
  }
  lua_close(L);
  if (status == SCHEDC_OK) {
    sc_builder *b = ld.b[ld.result];
    *ir = b->ir;
    memset(&b->ir, 0, sizeof b->ir);
    ir->files = ld.files.files;
    ir->nfiles = ld.files.nfiles;
    ld.files.files = NULL;
    ld.files.nfiles = 0;
    ir->nnodes = ld.topo.nnodes;
    ir->node_of = ld.topo.node_of;
    ld.topo.node_of = NULL;
    if (!ir->name[0]) {
      char nb[256];
      free(ir->name);
      ir->name = strdup(basename_noext(path, nb, sizeof nb));
    }
    if (!ir->name || sc_ir_finish(ir)) {
      sc_ir_free(ir);
      *err = dupmsg("not enough memory");
      status = SCHEDC_ENOMEM;
    }
  }
  for (int i = 0; i < ld.nb; i++) {
    sc_ir_free(&ld.b[i]->ir);
    free(ld.b[i]);
  }
  free(ld.b);
  sc_ir_free(&ld.files);
  sc_dsl_topo_free(&ld.topo);
  return status;
}
