/*
 * params.c — the parameter table built from params.h's list, its accessors and one strict parser
 * per type. The library's only getenv is here: a malformed value is SCHEDC_EINVAL naming the
 * variable, the value and the legal values, wherever it is read.
 */
#include "params.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

const sc_param_def sc_params[SC_P_COUNT_] = {
#define SC_X_(name, type, lo, hi, legal, dflt, scope, doc) \
  [SC_P_##name] = {#name, SC_PT_##type, (double)(lo), (double)(hi), legal, dflt, SC_PS_##scope, doc},
    SC_PARAM_LIST(SC_X_)
#undef SC_X_
};

const char *sc_param_raw(sc_param p) {
  const char *v = getenv(sc_params[p].name);
  return v && *v ? v : NULL; /* empty is unset, as NCCL reads its variables */
}

extern char **environ;

const char *sc_param_stray(int i) {
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "SCHEDC_", 7)) continue;
    size_t n = strcspn(*e, "=");
    int known = 0;
    for (int p = 0; p < SC_P_COUNT_ && !known; p++) known = strlen(sc_params[p].name) == n && !strncmp(sc_params[p].name, *e, n);
    if (!known && i-- == 0) return *e;
  }
  return NULL;
}

/* Bounds as people write them: 2^k for the large powers of two (2^30, not 1073741824). */
static void fmt_bound(double x, char *buf, size_t cap) {
  unsigned long long v = x >= 0 && x < 0x1p63 ? (unsigned long long)x : 0;
  int k = 0;
  while (k < 63 && v >> k > 1) k++;
  if (v >= 1ull << 20 && v == 1ull << k && (double)v == x) snprintf(buf, cap, "2^%d", k);
  else snprintf(buf, cap, "%.0f", x);
}

/* ENUM words: the text of `legal` up to '|', " (" or its end. */
static size_t word_len(const char *w) {
  size_t n = 0;
  while (w[n] && w[n] != '|' && !(w[n] == ' ' && w[n + 1] == '(')) n++;
  return n;
}
static const char *next_word(const char *w) {
  const char *bar = strchr(w, '|');
  return bar ? bar + 1 : NULL;
}

void sc_param_legal(sc_param p, char *buf, size_t cap) {
  const sc_param_def *d = &sc_params[p];
  char lo[32], hi[32];
  switch (d->type) {
  case SC_PT_INT: snprintf(buf, cap, "%s from %.0f to %.0f", d->legal, d->lo, d->hi); break;
  case SC_PT_SIZE:
    fmt_bound(d->lo, lo, sizeof lo);
    fmt_bound(d->hi, hi, sizeof hi);
    snprintf(buf, cap, "a whole number of bytes in [%s, %s]", lo, hi);
    break;
  case SC_PT_DOUBLE:
    if (isfinite(d->hi)) snprintf(buf, cap, "%s, a finite number > %g and <= %g", d->legal, d->lo, d->hi);
    else snprintf(buf, cap, "%s, a finite number > %g", d->legal, d->lo);
    break;
  case SC_PT_ENUM: {
    /* "choose a, b or c"; words that carry their meaning read better without "choose" */
    size_t w = (size_t)snprintf(buf, cap, "%s", strstr(d->legal, " (") ? "" : "choose ");
    for (const char *s = d->legal; s && w < cap; s = next_word(s)) {
      const char *nx = next_word(s);
      size_t len = nx ? (size_t)(nx - 1 - s) : strlen(s);
      const char *sep = s == d->legal ? "" : nx ? ", " : " or ";
      w += (size_t)snprintf(buf + w, cap - w, "%s%.*s", sep, (int)len, s);
    }
    break;
  }
  case SC_PT_STR:
  case SC_PT_PATH: snprintf(buf, cap, "%s", d->legal); break;
  }
}

/* The message of a malformed value: the variable, the value, the legal values. Numbers with a
 * unit say "expected"; an integer's and an enum's legal values read as the expectation itself
 * ("SCHEDC_CUDA_NODES='0': a node count from 1 to 64"), as the messages before this list did. */
static schedc_status bad(sc_param p, const char *v, int not_integer) {
  char legal[512];
  sc_param_legal(p, legal, sizeof legal);
  sc_param_type t = sc_params[p].type;
  if (not_integer) return sc_err(SCHEDC_EINVAL, "%s='%s' is not an integer (%s)", sc_params[p].name, v, legal);
  return sc_err(SCHEDC_EINVAL, "%s='%s': %s%s", sc_params[p].name, v,
                t == SC_PT_SIZE || t == SC_PT_DOUBLE ? "expected " : "", legal);
}

static schedc_status wrong_type(sc_param p, const char *want) {
  return sc_err(SCHEDC_EINTERNAL, "%s is not a%s parameter", sc_params[p].name, want);
}

schedc_status sc_param_parse_int(sc_param p, const char *v, long long *out) {
  const sc_param_def *d = &sc_params[p];
  if (d->type != SC_PT_INT) return wrong_type(p, "n integer");
  /* strtoll alone would take leading blanks, an empty number and trailing text */
  const char *digits = v + (*v == '+' || *v == '-');
  if (!isdigit((unsigned char)*digits)) return bad(p, v, 1);
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (*end) return bad(p, v, 1);
  if (errno == ERANGE || (double)x < d->lo || (double)x > d->hi) return bad(p, v, 0);
  *out = x;
  return SCHEDC_OK;
}

schedc_status sc_param_parse_size(sc_param p, const char *v, size_t *out) {
  const sc_param_def *d = &sc_params[p];
  if (d->type != SC_PT_SIZE) return wrong_type(p, " size");
  if (!isdigit((unsigned char)*v)) return bad(p, v, 0); /* no sign, no blank: strtoull takes both */
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || errno == ERANGE || (double)x < d->lo || (double)x > d->hi) return bad(p, v, 0);
  *out = (size_t)x;
  return SCHEDC_OK;
}

schedc_status sc_param_parse_double(sc_param p, const char *v, double *out) {
  const sc_param_def *d = &sc_params[p];
  if (d->type != SC_PT_DOUBLE) return wrong_type(p, " number");
  if (!*v || isspace((unsigned char)*v)) return bad(p, v, 0);
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  /* nan and inf parse; over- and underflow set ERANGE; neither is a usable setting */
  if (*end || errno == ERANGE || !isfinite(x) || !(x > d->lo) || x > d->hi) return bad(p, v, 0);
  *out = x;
  return SCHEDC_OK;
}

schedc_status sc_param_parse_enum(sc_param p, const char *v, int *out) {
  const sc_param_def *d = &sc_params[p];
  if (d->type != SC_PT_ENUM) return wrong_type(p, "n enum");
  int i = 0;
  for (const char *s = d->legal; s; s = next_word(s), i++) {
    size_t len = word_len(s);
    if (strlen(v) == len && !strncmp(v, s, len)) {
      *out = i;
      return SCHEDC_OK;
    }
  }
  return bad(p, v, 0);
}

/* The variable, else the list's default; NULL when neither. */
static const char *value_or_default(sc_param p) {
  const char *v = sc_param_raw(p);
  return v ? v : sc_params[p].dflt;
}

schedc_status sc_param_int(sc_param p, long long *out) {
  const char *v = value_or_default(p);
  return v ? sc_param_parse_int(p, v, out) : SCHEDC_OK;
}
schedc_status sc_param_size(sc_param p, size_t *out) {
  const char *v = value_or_default(p);
  return v ? sc_param_parse_size(p, v, out) : SCHEDC_OK;
}
schedc_status sc_param_double(sc_param p, double *out) {
  const char *v = value_or_default(p);
  return v ? sc_param_parse_double(p, v, out) : SCHEDC_OK;
}
schedc_status sc_param_enum(sc_param p, int *out) {
  const char *v = value_or_default(p);
  return v ? sc_param_parse_enum(p, v, out) : SCHEDC_OK;
}
const char *sc_param_str(sc_param p) { return value_or_default(p); }

schedc_status schedc_param_get(const char *name, const char **value) {
  if (!value) return sc_err(SCHEDC_EINVAL, "value is NULL");
  *value = NULL;
  for (int i = 0; name && i < SC_P_COUNT_; i++) {
    if (strcmp(name, sc_params[i].name)) continue;
    sc_param p = (sc_param)i;
    const char *v = value_or_default(p);
    long long n;
    size_t z;
    double x;
    int w;
    schedc_status st = !v ? SCHEDC_OK
                       : sc_params[p].type == SC_PT_INT    ? sc_param_parse_int(p, v, &n)
                       : sc_params[p].type == SC_PT_SIZE   ? sc_param_parse_size(p, v, &z)
                       : sc_params[p].type == SC_PT_DOUBLE ? sc_param_parse_double(p, v, &x)
                       : sc_params[p].type == SC_PT_ENUM   ? sc_param_parse_enum(p, v, &w)
                                                           : SCHEDC_OK;
    if (st == SCHEDC_OK) *value = v;
    return st;
  }
  return sc_err(SCHEDC_EINVAL, "'%s' is not a schedc parameter (docs/env.md lists them)", name ? name : "(null)");
}
