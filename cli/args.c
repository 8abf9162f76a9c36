/*
 * args.c — the command line of every subcommand: getopt_long in argument order (options before
 * or after FILE), one message for each kind of usage error, and the one strict parser of numbers
 * (counts with K/M/G suffixes, seconds, size lists, -D key=value) every option value goes through.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_parse_count(const char *s, long long lo, long long hi, long long *out) {
  /* digits first: strtoll alone would take blanks, a sign and an empty number */
  if (!s || !(*s >= '0' && *s <= '9')) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno) return -1;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  else if (*end == 'M' || *end == 'm') shift = 20;
  else if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) {
    if (v > LLONG_MAX >> shift) return -1; /* 2^63 and up: the shift would overflow */
    v <<= shift;
    end++;
  }
  if (*end == 'B') end++;
  if (*end || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int cli_parse_seconds(const char *s, double hi, double *out) {
  /* decimal only: no sign, blank, nan, inf or hexadecimal (strtod takes them all) */
  if (!s || !*s || !((*s >= '0' && *s <= '9') || *s == '.') || strpbrk(s, "xXpP")) return -1;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end || errno == ERANGE || !isfinite(v) || !(v > 0) || v > hi) return -1;
  *out = v;
  return 0;
}

int cli_parse_sizes(const char *v, size_t *sizes, int cap, char bad[64]) {
  int n = 0;
  const char *p = v;
  do { /* every item, empty ones too: "8,,64" and "8," are malformed, not two sizes */
    size_t len = strcspn(p, ",");
    char item[64];
    long long x;
    if (n == cap) return -2;
    int ok = len < sizeof item;
    if (ok) {
      memcpy(item, p, len);
      item[len] = 0;
      ok = !cli_parse_count(item, 1, 1LL << 40, &x);
    }
    if (!ok) {
      snprintf(bad, 64, "%.*s", (int)(len < 63 ? len : 63), p);
      return -1;
    }
    sizes[n++] = (size_t)x;
    p += len;
  } while (*p++ == ',');
  return n;
}

int cli_usage_error(const cli_args *a, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "schedc %s: ", a->cmd);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return EXIT_USAGE;
}

/* The long option an element "--name[=value]" names (getopt_long's rule: exact, else the only
 * one it abbreviates), or NULL. */
static const struct option *long_named(const struct option *lo, const char *el) {
  size_t len = strcspn(el + 2, "=");
  const struct option *hit = NULL;
  for (; lo && lo->name; lo++) {
    if (strncmp(lo->name, el + 2, len)) continue;
    if (strlen(lo->name) == len) return lo;
    hit = hit ? NULL : lo; /* two abbreviated: ambiguous */
  }
  return hit;
}

int cli_next(cli_args *a, const char **val) {
  *val = NULL;
  if (!a->begun) {
    /* '-': positionals come back in place as 1 (so FILE may come first, whatever POSIXLY_CORRECT
     * says); '+': the first positional ends the options (launch's CMD); ':': a missing value is
     * told apart from an unknown option. optind 0: glibc starts over. */
    snprintf(a->optstring, sizeof a->optstring, "%c:%s", a->stop_at_positional ? '+' : '-', a->shortopts);
    optind = 0;
    opterr = 0;
    a->begun = 1;
  }
  if (a->done) {
    if (a->stop_at_positional || optind >= a->argc) return CLI_END;
    *val = a->argv[optind++]; /* after "--" */
    return CLI_ARG;
  }
  int before = optind ? optind : 1, li = -1;
  int c = getopt_long(a->argc, a->argv, a->optstring, a->longopts, &li);
  /* the element getopt looked at: the one it moved past, or (inside a cluster such as -xh) the
   * one it is still in */
  const char *el = optind > before ? a->argv[optind - 1] : a->argv[optind < a->argc ? optind : a->argc - 1];
  a->opt[0] = 0;
  if (c == -1) {
    a->done = 1;
    return cli_next(a, val);
  }
  if (c == 1) { *val = optarg; return CLI_ARG; }
  if (li >= 0) snprintf(a->opt, sizeof a->opt, "--%s", a->longopts[li].name);
  else if (c != '?' && c != ':') snprintf(a->opt, sizeof a->opt, "-%c", c);
  if (c == ':') {
    if (el[0] == '-' && el[1] == '-') {
      const struct option *o = long_named(a->longopts, el);
      return cli_usage_error(a, "option --%s needs a value", o ? o->name : el + 2), CLI_BAD;
    }
    return cli_usage_error(a, "option -%c needs a value", optopt), CLI_BAD;
  }
  if (c == '?') {
    if (el[0] == '-' && el[1] == '-') {
      size_t len = strcspn(el, "=");
      const struct option *o = long_named(a->longopts, el);
      if (o && el[len] && o->has_arg == no_argument) return cli_usage_error(a, "option --%s takes no value ('%s')", o->name, el), CLI_BAD;
      if (!o && optopt == 0 && len > 2) {
        int n = 0; /* getopt_long refuses an abbreviation of two options: name them */
        for (const struct option *p = a->longopts; p && p->name; p++) n += !strncmp(p->name, el + 2, len - 2);
        if (n > 1) return cli_usage_error(a, "option '%.*s' is ambiguous (see 'schedc %s --help')", (int)len, el, a->cmd), CLI_BAD;
      }
      return cli_usage_error(a, "unknown option '%.*s' (see 'schedc %s --help')", (int)len, el, a->cmd), CLI_BAD;
    }
    return cli_usage_error(a, "unknown option '-%c' (see 'schedc %s --help')", optopt, a->cmd), CLI_BAD;
  }
  *val = optarg;
  return c;
}

int cli_rest(const cli_args *a) { (void)a; return optind; }

int cli_after_dashes(const cli_args *a) {
  return optind > 1 && optind <= a->argc && !strcmp(a->argv[optind - 1], "--");
}

int cli_opt_count(const cli_args *a, const char *v, long long lo, long long hi, const char *what, long long *out) {
  if (!cli_parse_count(v, lo, hi, out)) return 0;
  cli_usage_error(a, "%s '%s' is not %s", a->opt, v, what);
  return -1;
}

int cli_opt_int(const cli_args *a, const char *v, int lo, int hi, const char *what, int *out) {
  long long x;
  if (cli_opt_count(a, v, lo, hi, what, &x)) return -1;
  *out = (int)x;
  return 0;
}

int cli_opt_seconds(const cli_args *a, const char *v, double hi, const char *what, double *out) {
  if (!cli_parse_seconds(v, hi, out)) return 0;
  cli_usage_error(a, "%s '%s' is not %s", a->opt, v, what);
  return -1;
}

int cli_opt_sizes(const cli_args *a, const char *v, size_t *sizes, int cap, int *n) {
  char bad[64];
  if ((*n = cli_parse_sizes(v, sizes, cap, bad)) >= 0) return 0;
  if (*n == -2)
    cli_usage_error(a, "%s '%s': more than %d sizes", a->opt, v, cap);
  else
    cli_usage_error(a, "%s '%s': bad size '%s' (a byte count from 1 to 2^40: digits, K, M or G suffix)", a->opt, v, bad);
  return -1;
}

int cli_opt_define(const cli_args *a, const char *v, const char **defines, int *n) {
  if (!v || !strchr(v, '=') || v[0] == '=') {
    cli_usage_error(a, "-D '%s': expected key=value", v ? v : "");
    return -1;
  }
  defines[(*n)++] = v;
  return 0;
}

int cli_opt_wire(const cli_args *a, const char *v, int *wire) {
  schedc_wire w;
  if (schedc_wire_parse(v, &w) == SCHEDC_OK) { *wire = (int)w; return 0; }
  cli_usage_error(a, "%s '%s' (choose q8 or q16, or default)", a->opt, v);
  return -1;
}

int cli_opt_topk(const cli_args *a, const char *v, double *frac) {
  char *end = NULL;
  double f = v && *v ? strtod(v, &end) : 0;
  if (end && *end == '%' && end[1] == 0) f /= 100, end++;
  if (end && *end == 0 && f > 0 && f <= 1) { *frac = f; return 0; }
  cli_usage_error(a, "%s '%s' is not a fraction of the elements in (0, 1] (0.01, or 1%%)", a->opt, v);
  return -1;
}
