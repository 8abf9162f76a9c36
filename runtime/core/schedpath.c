/*
 * schedpath.c — name lookup for schedules and topologies (schedpath.h, schedc_schedule_find).
 * The installed folder is found from where this code was loaded (libschedc.so, or the program a
 * static libschedc.a is linked into) as <its folder>/../share/schedc: a relocated prefix works
 * and no path is compiled in. A build tree mirrors it: build/share/schedc links to schedules/.
 */
#define _GNU_SOURCE
#include "params.h"
#include "schedpath.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"

static int is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && !S_ISDIR(st.st_mode);
}

static int ends_lua(const char *name) {
  size_t n = strlen(name);
  return n > 4 && strcmp(name + n - 4, ".lua") == 0;
}

/* share/schedc relative to the library's folder (lib/) and to a program's (bin/), from the
 * install folders (CMakeLists.txt); usually both "../share/schedc". */
#ifndef SC_LIB_TO_SHARE
#define SC_LIB_TO_SHARE "../share/schedc"
#endif
#ifndef SC_BIN_TO_SHARE
#define SC_BIN_TO_SHARE "../share/schedc"
#endif

/* The file this code was loaded from; *is_program: it is the program (libschedc.a linked in).
 * A program's own link-map name is empty (dladdr would give argv[0], which may be relative to
 * another directory or found through $PATH), so the program's file comes from /proc/self/exe. */
static int self_path(char *buf, size_t cap, int *is_program) {
  Dl_info info;
  struct link_map *lm = NULL;
  *is_program = 0;
  if (dladdr1((const void *)&sc_find_file, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm && lm->l_name &&
      lm->l_name[0])
    return snprintf(buf, cap, "%s", lm->l_name) < (int)cap ? 0 : -1;
  *is_program = 1;
  ssize_t k = readlink("/proc/self/exe", buf, cap - 1);
  if (k <= 0 || (size_t)k >= cap - 1) return -1;
  buf[k] = 0;
  return 0;
}

/* <folder of file>/rel, normalised when it exists (it is shown in the error listing). */
static int share_of(const char *file, const char *rel, char *out, size_t cap) {
  const char *slash = strrchr(file, '/');
  char raw[PATH_MAX];
  int n = slash ? snprintf(raw, sizeof raw, "%.*s/%s", (int)(slash - file), file, rel)
                : snprintf(raw, sizeof raw, "%s", rel);
  if (n < 0 || (size_t)n >= sizeof raw) return -1;
  char real[PATH_MAX];
  return snprintf(out, cap, "%s", realpath(raw, real) ? real : raw) < (int)cap ? 0 : -1;
}

/* The installed schedule folders: from the loaded file's path, and from its resolved path when
 * it was reached through a symbolic link into another prefix. Returns how many (0..2). */
static int install_dirs(char dirs[2][PATH_MAX]) {
  char self[PATH_MAX], real[PATH_MAX];
  int prog;
  if (self_path(self, sizeof self, &prog)) return 0;
  const char *rel = prog ? SC_BIN_TO_SHARE : SC_LIB_TO_SHARE;
  int n = 0;
  if (share_of(self, rel, dirs[n], PATH_MAX) == 0) n++;
  if (realpath(self, real) && share_of(real, rel, dirs[n], PATH_MAX) == 0 && (n == 0 || strcmp(dirs[0], dirs[n]) != 0))
    n++;
  return n;
}

typedef struct search {
  const char *name, *sub;
  char *out;
  size_t cap;
  char looked[4096]; /* "\n  FOLDER  (why it is searched)" per place searched, for the error */
  size_t w;
  int too_long;
} search;

/* Try DIR[/sub]/NAME, then DIR[/sub]/NAME.lua; 1 if found (path in s->out). */
static int try_dir(search *s, const char *dir, const char *why) {
  char d[PATH_MAX], p[PATH_MAX];
  int has_lua = ends_lua(s->name);
  if (snprintf(d, sizeof d, "%s%s%s", dir, s->sub ? "/" : "", s->sub ? s->sub : "") >= (int)sizeof d) return 0;
  for (int ext = 0; ext <= !has_lua; ext++) {
    if (snprintf(p, sizeof p, "%s/%s%s", d, s->name, ext ? ".lua" : "") >= (int)sizeof p || !is_file(p)) continue;
    if (strlen(p) >= s->cap) {
      s->too_long = 1;
      return 0;
    }
    memcpy(s->out, p, strlen(p) + 1);
    return 1;
  }
  if (s->w < sizeof s->looked) {
    int k = snprintf(s->looked + s->w, sizeof s->looked - s->w, "\n  %s  (%s)", d, why);
    if (k > 0) s->w += (size_t)k;
  }
  return 0;
}

schedc_status sc_find_file(const char *name, const char *sub, schedc_status notfound, char *out, size_t cap) {
  const char *what = sub ? "topology" : "schedule";
  if (!name || !*name || !out || !cap) return sc_err(SCHEDC_EINVAL, "%s name or output buffer is NULL or empty", what);
  if (strchr(name, '/') || is_file(name)) { /* a path: used as given (its own error if unreadable) */
    if (strlen(name) >= cap) return sc_err(SCHEDC_EINVAL, "%s path too long: %s", what, name);
    memcpy(out, name, strlen(name) + 1);
    return SCHEDC_OK;
  }
  search s = {.name = name, .sub = sub, .out = out, .cap = cap};
  /* SCHEDC_SCHEDULE_PATH: colon-separated folders, searched before the install. */
  const char *env = sc_param_str(SC_P_SCHEDC_SCHEDULE_PATH);
  for (const char *p = env; p && *p;) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > 0 && len < PATH_MAX) {
      char dir[PATH_MAX];
      memcpy(dir, p, len);
      dir[len] = 0;
      if (try_dir(&s, dir, "SCHEDC_SCHEDULE_PATH")) return SCHEDC_OK;
    }
    p = e ? e + 1 : p + len;
  }
  char dirs[2][PATH_MAX];
  int nd = install_dirs(dirs);
  for (int i = 0; i < nd; i++)
    if (try_dir(&s, dirs[i], "installed: share/schedc beside the library; in a build tree a link to schedules/"))
      return SCHEDC_OK;
  if (s.too_long) return sc_err(SCHEDC_EINVAL, "the path of %s '%s' is longer than %zu bytes", what, name, cap - 1);
  int has_lua = ends_lua(name);
  return sc_err(notfound, "cannot find %s '%s': no such file here, nor %s%s%s%s in:%s%s", what, name, name,
                has_lua ? "" : " or ", has_lua ? "" : name, has_lua ? "" : ".lua", s.looked,
                nd ? "" : "\n  (the installed schedules: unknown, the library's location could not be found)");
}

schedc_status schedc_schedule_find(const char *name, char *path, size_t cap) {
  return sc_find_file(name, NULL, SCHEDC_EIO, path, cap);
}
