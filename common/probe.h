/*
 * probe.h — what `schedc info` (runtime/info.c) says about one optional part: a library loaded at
 * run time or linked in, or a backend. Each part's own loader fills it (it alone knows its
 * candidates and why it failed), so the report never guesses.
 */
#ifndef SC_PROBE_H
#define SC_PROBE_H

typedef struct sc_probe {
  int built;         /* compiled into this build (dlopen'd parts: always) */
  int found;         /* a library: loaded here; a backend: usable here */
  char path[512];    /* the file loaded ("" when not loaded or not known) */
  char version[128]; /* its own words ("" when it has none) */
  char why[1024];    /* not found: why, and what to install or set; found: a remark or "" */
} sc_probe;

typedef void (*sc_probe_fn)(sc_probe *p);

#endif
