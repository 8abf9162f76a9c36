/*
 * hostlist.c — `schedc launch --hosts`: the host list (h1:2,h2:2), where each rank goes (in blocks
 * of slots, or round-robin as mpirun's --map-by node), and the command line that starts a rank
 * on its host: through a remote shell (ssh: one shell-quoted line) or an exec-style prefix
 * (`ip netns exec NAME`, a template with %h). Pure functions of their arguments: launch.c forks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_hosts_free(cli_hosts *h) {
  for (int i = 0; i < h->n; i++) free(h->name[i]);
  free(h->name);
  free(h->slots);
  *h = (cli_hosts){0};
}

/* A host name as ssh and a template take it: not empty, no blank or quote, not an option. */
static int bad_name(const char *s, size_t len) {
  if (len == 0 || s[0] == '-') return 1;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)s[i] <= ' ' || strchr("'\"\\`$;&|<>()%", s[i]) || s[i] == 0x7f) return 1;
  return 0;
}

int cli_hosts_parse(const char *v, cli_hosts *h, char *why, size_t cap) {
  *h = (cli_hosts){0};
  const char *p = v;
  for (;;) {
    const char *end = strchr(p, ','), *colon;
    size_t len = end ? (size_t)(end - p) : strlen(p);
    colon = memchr(p, ':', len);
    size_t nlen = colon ? (size_t)(colon - p) : len;
    long long slots = 1;
    if (bad_name(p, nlen)) {
      snprintf(why, cap, "'%.*s' is not a host name (HOST or HOST:SLOTS, comma-separated; no blanks, quotes or "
               "shell characters, not starting with '-')", (int)(len > 64 ? 64 : len), p);
      goto fail;
    }
    if (colon) {
      char num[32] = "";
      size_t sl = len - nlen - 1;
      if (sl < sizeof num) memcpy(num, colon + 1, sl);
      if (sl >= sizeof num || cli_parse_count(num, 1, 4096, &slots) != 0 || strpbrk(num, "KMGkmgBb")) {
        snprintf(why, cap, "'%.*s': the slots of host '%.*s' are not a count from 1 to 4096", (int)(sl > 32 ? 32 : sl),
                 colon + 1, (int)nlen, p);
        goto fail;
      }
    }
    for (int i = 0; i < h->n; i++)
      if (strlen(h->name[i]) == nlen && memcmp(h->name[i], p, nlen) == 0) {
        snprintf(why, cap, "host '%s' is given twice", h->name[i]);
        goto fail;
      }
    if (h->n == 4096) { snprintf(why, cap, "more than 4096 hosts"); goto fail; }
    char **nn = realloc(h->name, (size_t)(h->n + 1) * sizeof *nn);
    if (nn) h->name = nn;
    int *ns = nn ? realloc(h->slots, (size_t)(h->n + 1) * sizeof *ns) : NULL;
    if (ns) h->slots = ns;
    char *name = ns ? strndup(p, nlen) : NULL;
    if (!name) { snprintf(why, cap, "out of memory"); goto fail; }
    h->name[h->n] = name;
    h->slots[h->n++] = (int)slots;
    if (!end) return 0;
    p = end + 1;
  }
fail:
  cli_hosts_free(h);
  return -1;
}

int cli_hosts_place(const cli_hosts *h, int n, int by_node, cli_place *pl) {
  int total = 0;
  for (int i = 0; i < h->n; i++) total += h->slots[i];
  if (n > total) return -1;
  int *used = calloc((size_t)h->n, sizeof *used);
  if (!used) return -2;
  for (int r = 0, i = 0; r < n; r++) {
    if (by_node) { /* the next host in turn that has a free slot */
      while (used[i] == h->slots[i]) i = (i + 1) % h->n;
    } else {
      while (used[i] == h->slots[i]) i++;
    }
    pl[r].host = i;
    pl[r].local = used[i]++;
    if (by_node) i = (i + 1) % h->n;
  }
  /* group numbers: the hosts that got a rank, in list order */
  int groups = 0, *group = calloc((size_t)h->n, sizeof *group);
  if (!group) { free(used); return -2; }
  for (int i = 0; i < h->n; i++) group[i] = used[i] ? groups++ : -1;
  for (int r = 0; r < n; r++) {
    pl[r].local_n = used[pl[r].host];
    pl[r].group = group[pl[r].host];
    pl[r].ngroups = groups;
  }
  free(used);
  free(group);
  return 0;
}

/* s in single quotes for a POSIX shell ('\'' for a quote). */
static void sh_quote(cli_sbuf *b, const char *s) {
  cli_sb_puts(b, "'");
  for (; *s; s++) cli_sb_puts(b, *s == '\'' ? "'\\''" : (char[]){*s, 0});
  cli_sb_puts(b, "'");
}

/* Split a command template into words at blanks, %h -> host, %% -> %; appended to v. */
static int split_words(const char *t, const char *host, char ***v, int *n, int *cap) {
  for (const char *p = t; *p;) {
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) break;
    cli_sbuf w = {0};
    for (; *p && *p != ' ' && *p != '\t'; p++) {
      if (p[0] == '%' && p[1] == 'h') { cli_sb_puts(&w, host); p++; }
      else if (p[0] == '%' && p[1] == '%') { cli_sb_puts(&w, "%"); p++; }
      else cli_sb_puts(&w, (char[]){*p, 0});
    }
    if (w.oom) { cli_sb_free(&w); return -1; }
    if (*n + 2 > *cap) {
      char **nv = realloc(*v, (size_t)(*cap = *cap * 2 + 8) * sizeof *nv);
      if (!nv) { cli_sb_free(&w); return -1; }
      *v = nv;
    }
    (*v)[(*n)++] = w.p ? w.p : strdup("");
  }
  return 0;
}

char **cli_hosts_argv(const cli_hostcmd *hc, const char *host, const char *const *env, int nenv, char *const *cmd,
                      int ncmd) {
  int n = 0, cap = 0;
  char **v = NULL;
  if (split_words(hc->rsh ? hc->rsh : hc->prefix, host, &v, &n, &cap) != 0) goto oom;
  if (hc->rsh) { /* rsh HOST 'cd DIR && exec env K=V... CMD ARGS...': one line for its shell */
    cli_sbuf line = {0};
    if (hc->cwd) { cli_sb_puts(&line, "cd "); sh_quote(&line, hc->cwd); cli_sb_puts(&line, " && "); }
    cli_sb_puts(&line, "exec env");
    for (int i = 0; i < nenv; i++) { cli_sb_puts(&line, " "); sh_quote(&line, env[i]); }
    for (int i = 0; i < ncmd; i++) { cli_sb_puts(&line, " "); sh_quote(&line, cmd[i]); }
    char **nv = line.oom ? NULL : realloc(v, (size_t)(n + 3) * sizeof *nv);
    if (!nv || !(nv[n] = strdup(host))) { cli_sb_free(&line); if (nv) v = nv; goto oom; }
    v = nv;
    v[n + 1] = line.p;
    v[n + 2] = NULL;
    return v;
  }
  /* PREFIX... env K=V... CMD ARGS...: words as they are (the prefix execs them) */
  char **nv = realloc(v, (size_t)(n + 2 + nenv + ncmd) * sizeof *nv);
  if (!nv) goto oom;
  v = nv;
  if (!(v[n++] = strdup("env"))) goto oom;
  for (int i = 0; i < nenv; i++) if (!(v[n++] = strdup(env[i]))) goto oom;
  for (int i = 0; i < ncmd; i++) if (!(v[n++] = strdup(cmd[i]))) goto oom;
  v[n] = NULL;
  return v;
oom:
  if (v) { v[n] = NULL; cli_hosts_argv_free(v); }
  return NULL;
}

void cli_hosts_argv_free(char **v) {
  for (int i = 0; v && v[i]; i++) free(v[i]);
  free(v);
}
