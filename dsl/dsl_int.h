/*
 * dsl_int.h — internals shared by the dsl/ files: the per-load state (sandbox limits, topology,
 * schedules being built) and the helpers that point errors at the user's file:line.
 */
#ifndef SC_DSL_INT_H
#define SC_DSL_INT_H

#include <lauxlib.h>
#include <lua.h>

#include "dsl.h"

typedef struct sc_topo {
  uint32_t nranks, nnodes;
  uint32_t *node_of;     /* [nranks] */
  uint32_t *local_rank;  /* [nranks] */
  uint32_t *node_first;  /* [nnodes + 1]: offsets into by_node */
  uint32_t *by_node;     /* ranks grouped by node, ascending within a node */
  /* levels (docs/topology.md), outermost ("host") first. A file with `ranks` and `levels` gives
   * them; otherwise two levels, "host" (the nodes) and "rank", and located == 0. */
  uint32_t nlevels;
  int located;
  struct sc_topo_level { char name[16], kind[8]; double gbps, alpha_us; } *levels; /* gbps < 0: unknown */
  uint32_t *order;       /* [nranks]: locality order (the groups' ids, then the rank) */
  uint32_t *gid;         /* [nranks * nlevels]: rank r's group at level l, groups numbered in locality order */
  uint32_t *ngroups;     /* [nlevels] */
  char **nic;            /* [nranks]: nearest NIC's name or NULL */
} sc_topo;

typedef struct sc_builder {
  sc_ir ir;              /* files are filled from the loader's table at the end */
} sc_builder;

typedef struct sc_sched_ud { int b; } sc_sched_ud;  /* a schedule object: index into b[] */

typedef struct sc_loader {
  const char *path;
  sc_dsl_opts opts;
  sc_topo topo;
  sc_builder **b;        /* every schedule{} made by the script; the returned one is kept */
  int nb;
  sc_ir files;           /* only .files/.nfiles used: the file table of user locations */
  const char *last_src;  /* cache: source pointer of the last located frame -> file index */
  int last_file;
  size_t mem, mem_cap;   /* Lua's allocations, and the cap they share with ir_bytes */
  size_t ir_bytes;       /* the transfers the script made (C memory, charged against mem_cap) */
  int mem_exceeded;
  uint64_t instr, instr_cap;
  double deadline;       /* monotonic seconds: the wall-clock limit */
  int tripped;           /* a limit was hit: every later instruction raises limit_msg again */
  char limit_msg[512];
  int result;            /* index of the returned schedule */
  int status;            /* status of a failed load (set before raising where it is not ESCRIPT) */
} sc_loader;

/* Registry keys / metatable names. */
#define SC_SCHED_MT "schedc.schedule"
#define SC_STEP_MT "schedc.step"

sc_loader *sc_dsl_loader(lua_State *L);
/* Charge `bytes` of C-side IR memory against the script's memory cap (raises when over it). */
void sc_dsl_charge(lua_State *L, size_t bytes);
/* Monotonic seconds. */
double sc_dsl_now(void);
/* Create the sandboxed state (allocator with memory cap, instruction hook, safe libraries,
 * locked globals). The loader must outlive the state. NULL on OOM. */
lua_State *sc_dsl_newstate(sc_loader *ld);
/* Open the safe libraries and install the instruction hook (inside the protected main). */
void sc_dsl_open_safe(lua_State *L);
/* Make unknown global reads and new global writes errors (call after installing globals). */
void sc_dsl_lock_globals(lua_State *L);
/* The user's location of the running call: the innermost Lua frame that is not library code.
 * Sets *file (index in the loader's table) and *line. */
void sc_dsl_where(lua_State *L, uint32_t *file, uint32_t *line);
/* luaL_argerror at the user's file:line: "f.lua:12: bad argument #2 to 'reduce' (...)". */
int sc_dsl_argerror(lua_State *L, int arg, const char *fmt, ...);
/* luaL_error at the user's file:line. */
int sc_dsl_error(lua_State *L, const char *fmt, ...);

/* builtins.c: install schedule{} and the schedule/step metatables. */
/* luaL_loadfilex(L, path, "t") for a regular file of at most SC_DSL_MAX_FILE bytes only: a FIFO,
 * device or directory is refused (LUA_ERRFILE, "PATH is a FIFO, not a regular file") before
 * anything blocks on it or reads it. */
#define SC_DSL_MAX_FILE (256ull << 20)
int sc_dsl_loadfile(lua_State *L, const char *path);
void sc_dsl_open_builtins(lua_State *L);
/* topo.c: build the topology (file, --nodes or one node) and install `topo`. Errors raise. */
void sc_dsl_open_topo(lua_State *L);
void sc_dsl_topo_free(sc_topo *t);
/* Allocate t's per-rank and per-node arrays for n ranks on m nodes (raises on OOM). */
void sc_dsl_topo_alloc(lua_State *L, sc_topo *t, uint32_t n, uint32_t m);
/* Argument 1 as an integer in [0, limit) ("rank", "node"), else an argument error. */
uint32_t sc_dsl_check_index(lua_State *L, uint32_t limit, const char *what);
/* levels.c: read `levels` and `ranks` (the file's table on top; nodes from the host level,
 * located = 1), or make the default levels host (the nodes) and rank; then install the level
 * functions and `levels` in the `topo` table on top of the stack. Errors raise. */
void sc_dsl_topo_read_ranks(lua_State *L, sc_topo *t, const char *path, uint32_t want_n);
void sc_dsl_topo_default_levels(lua_State *L, sc_topo *t);
void sc_dsl_topo_open_levels(lua_State *L, const sc_topo *t);
/* Install `params` from the -D defines. */
void sc_dsl_open_params(lua_State *L);

#endif
