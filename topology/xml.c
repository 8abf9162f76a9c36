/*
 * xml.c — the strict XML reader of xml.h. One pass over the bytes with the line counted;
 * attribute values are decoded into a scratch buffer as large as the input (so no value can
 * overflow it); the element stack is bounded (SC_XML_MAX_DEPTH) and closing tags must match.
 */
#include "xml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rd {
  const char *name, *p, *end;
  int line;
  char *err;
  size_t cap;
} rd;

static int fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(rd *r, const char *fmt, ...) {
  int n = snprintf(r->err, r->cap, "%s:%d: ", r->name, r->line);
  va_list ap;
  va_start(ap, fmt);
  if (n >= 0 && (size_t)n < r->cap) vsnprintf(r->err + n, r->cap - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

static int is_name_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
static int is_name(int c) { return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static void skip_space(rd *r) {
  while (r->p < r->end && is_space((unsigned char)*r->p)) { if (*r->p == '\n') r->line++; r->p++; }
}

/* Advance past `pat`, counting lines; -1 when the text ends first. */
static int skip_past(rd *r, const char *pat) {
  size_t k = strlen(pat);
  while (r->p + k <= r->end) {
    if (!memcmp(r->p, pat, k)) { r->p += k; return 0; }
    if (*r->p == '\n') r->line++;
    r->p++;
  }
  r->p = r->end;
  return -1;
}

/* A name into dst (NUL-terminated; dst has room for the rest of the input). */
static int read_name(rd *r, char *dst, const char *what) {
  if (r->p >= r->end || !is_name_start((unsigned char)*r->p))
    return fail(r, "expected %s name, found %s", what, r->p >= r->end ? "the end of the file" : "another character");
  size_t n = 0;
  while (r->p < r->end && is_name((unsigned char)*r->p)) {
    if (n >= 255) return fail(r, "%s name longer than 255 characters", what);
    dst[n++] = *r->p++;
  }
  dst[n] = 0;
  return 0;
}

/* A quoted value decoded into dst (&amp; &lt; &gt; &quot; &apos; and &#N; / &#xN; below 128). */
static int read_value(rd *r, char *dst, const char *attr) {
  if (r->p >= r->end || (*r->p != '"' && *r->p != '\'')) return fail(r, "attribute '%s' needs a quoted value", attr);
  char q = *r->p++;
  size_t n = 0;
  while (r->p < r->end && *r->p != q) {
    char c = *r->p;
    if (c == '<') return fail(r, "'<' inside the value of attribute '%s'", attr);
    if (c == '\n') r->line++;
    if (c == '&') {
      static const char *const ent[][2] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
      int done = 0;
      for (size_t i = 0; i < sizeof ent / sizeof ent[0] && !done; i++) {
        size_t k = strlen(ent[i][0]);
        if ((size_t)(r->end - r->p) >= k && !memcmp(r->p, ent[i][0], k)) { dst[n++] = ent[i][1][0]; r->p += k; done = 1; }
      }
      if (!done && r->end - r->p >= 4 && r->p[1] == '#') {
        const char *s = r->p + 2;
        int hex = *s == 'x';
        s += hex;
        long v = 0;
        int digits = 0;
        while (s < r->end && digits < 8 && (hex ? strchr("0123456789abcdefABCDEF", *s) != NULL : (*s >= '0' && *s <= '9')) && *s) {
          v = v * (hex ? 16 : 10) + (*s <= '9' ? *s - '0' : ((*s | 32) - 'a' + 10));
          s++; digits++;
        }
        if (digits && s < r->end && *s == ';' && v > 0 && v < 128) { dst[n++] = (char)v; r->p = s + 1; done = 1; }
      }
      if (!done) return fail(r, "unknown or malformed entity in the value of attribute '%s'", attr);
      continue;
    }
    if (c == 0) return fail(r, "a NUL byte in the value of attribute '%s'", attr);
    dst[n++] = c;
    r->p++;
  }
  if (r->p >= r->end) return fail(r, "the value of attribute '%s' is not closed before the end of the file", attr);
  r->p++;
  dst[n] = 0;
  return 0;
}

int sc_xml_parse(const char *name, const char *text, size_t len, const sc_xml_cb *cb, char *err, size_t cap) {
  rd r = {name, text, text + len, 1, err, cap};
  /* scratch for names and decoded values: never more than the input plus NULs */
  size_t scap = len + 2 * (SC_XML_MAX_ATTRS + 2) + 512;
  char *scratch = malloc(scap);
  char (*stack)[256] = malloc(SC_XML_MAX_DEPTH * sizeof *stack);
  int depth = 0, roots = 0, rc = -1;
  if (!scratch || !stack) { snprintf(err, cap, "%s: out of memory", name); goto out; }
  if (memchr(text, 0, len)) {
    const char *z = memchr(text, 0, len);
    for (const char *s = text; s < z; s++) r.line += *s == '\n';
    fail(&r, "a NUL byte: not a text file");
    goto out;
  }
  if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) r.p += 3; /* UTF-8 byte order mark */
  for (;;) {
    /* text between tags: only white space outside the root; ignored inside */
    while (r.p < r.end && *r.p != '<') {
      if (!depth && !is_space((unsigned char)*r.p)) { fail(&r, "text outside the root element"); goto out; }
      if (*r.p == '\n') r.line++;
      r.p++;
    }
    if (r.p >= r.end) break;
    int line = r.line;
    if (r.end - r.p >= 4 && !memcmp(r.p, "<!--", 4)) {
      r.p += 4;
      if (skip_past(&r, "-->")) { r.line = line; fail(&r, "comment not closed"); goto out; }
      continue;
    }
    if (r.end - r.p >= 2 && r.p[1] == '?') {
      if (skip_past(&r, "?>")) { r.line = line; fail(&r, "'<?' not closed by '?>'"); goto out; }
      continue;
    }
    if (!depth && r.end - r.p >= 9 && !memcmp(r.p, "<!DOCTYPE", 9)) {
      /* lstopo writes <!DOCTYPE topology SYSTEM "hwloc2.dtd">: an external name only is
       * harmless; an internal subset ('[') could declare entities, and is refused */
      const char *q = r.p;
      while (q < r.end && *q != '>' && *q != '[') q++;
      if (q >= r.end || *q == '[') { fail(&r, "a <!DOCTYPE with an internal subset is not accepted (no entities in a topology file)"); goto out; }
      for (const char *c = r.p; c < q; c++) r.line += *c == '\n';
      r.p = q + 1;
      continue;
    }
    if (r.end - r.p >= 2 && r.p[1] == '!') {
      fail(&r, "%s is not accepted here (no DTD, entity or CDATA in a topology file)",
           r.end - r.p >= 9 && !memcmp(r.p, "<!DOCTYPE", 9) ? "<!DOCTYPE" : "'<!'");
      goto out;
    }
    r.p++;
    if (r.p < r.end && *r.p == '/') { /* closing tag */
      r.p++;
      if (read_name(&r, scratch, "a closing tag's")) goto out;
      skip_space(&r);
      if (r.p >= r.end || *r.p != '>') { fail(&r, "'</%s' is not closed by '>'", scratch); goto out; }
      r.p++;
      if (!depth) { fail(&r, "closing tag </%s> without an open element", scratch); goto out; }
      if (strcmp(stack[depth - 1], scratch)) { fail(&r, "closing tag </%s> does not match <%s>", scratch, stack[depth - 1]); goto out; }
      depth--;
      if (cb->close && cb->close(cb->ctx, scratch, line, err, cap)) goto out;
      continue;
    }
    if (!depth && roots) { fail(&r, "a second root element"); goto out; }
    if (depth >= SC_XML_MAX_DEPTH) { fail(&r, "elements nested deeper than %d", SC_XML_MAX_DEPTH); goto out; }
    char *ename = scratch, *w;
    if (read_name(&r, ename, "an element")) goto out;
    w = ename + strlen(ename) + 1;
    sc_xml_attr attrs[SC_XML_MAX_ATTRS];
    int na = 0, selfclose = 0;
    for (;;) {
      const char *before = r.p;
      skip_space(&r);
      if (r.p >= r.end) { r.line = line; fail(&r, "<%s is not closed by '>'", ename); goto out; }
      if (*r.p == '>') { r.p++; break; }
      if (*r.p == '/') {
        if (r.end - r.p < 2 || r.p[1] != '>') { fail(&r, "'/' in <%s> not followed by '>'", ename); goto out; }
        r.p += 2;
        selfclose = 1;
        break;
      }
      if (r.p == before) { fail(&r, "attributes of <%s> must be separated by white space", ename); goto out; }
      if (na >= SC_XML_MAX_ATTRS) { fail(&r, "<%s> has more than %d attributes", ename, SC_XML_MAX_ATTRS); goto out; }
      char *an = w;
      if (read_name(&r, an, "an attribute")) goto out;
      w = an + strlen(an) + 1;
      for (int i = 0; i < na; i++)
        if (!strcmp(attrs[i].name, an)) { fail(&r, "attribute '%s' given twice in <%s>", an, ename); goto out; }
      skip_space(&r);
      if (r.p >= r.end || *r.p != '=') { fail(&r, "attribute '%s' of <%s> needs '=' and a value", an, ename); goto out; }
      r.p++;
      skip_space(&r);
      char *av = w;
      if (read_value(&r, av, an)) goto out;
      w = av + strlen(av) + 1;
      attrs[na].name = an;
      attrs[na].value = av;
      na++;
    }
    roots++;
    if (cb->open && cb->open(cb->ctx, ename, attrs, na, line, err, cap)) goto out;
    if (selfclose) {
      if (cb->close && cb->close(cb->ctx, ename, line, err, cap)) goto out;
    } else {
      snprintf(stack[depth++], 256, "%s", ename);
    }
  }
  if (depth) { fail(&r, "the file ends inside <%s>", stack[depth - 1]); goto out; }
  if (!roots) { fail(&r, "no XML element"); goto out; }
  rc = 0;
out:
  free(scratch);
  free(stack);
  return rc;
}

/* The root's name, then stop: the parser skips what comes before it (the prolog, comments,
 * which may mention any element, a <!DOCTYPE) exactly as a full read would. */
typedef struct root_ctx { char *out; size_t cap; } root_ctx;

static int root_open(void *ctx, const char *name, const sc_xml_attr *attrs, int nattrs, int line, char *err, size_t cap) {
  (void)attrs; (void)nattrs; (void)line; (void)err; (void)cap;
  root_ctx *r = ctx;
  snprintf(r->out, r->cap, "%s", name);
  return -1; /* found: stop reading */
}

void sc_xml_root(const char *text, size_t len, char *out, size_t cap) {
  out[0] = 0;
  root_ctx r = {out, cap};
  sc_xml_cb cb = {&r, root_open, NULL};
  char err[256];
  (void)sc_xml_parse("", text, len, &cb, err, sizeof err); /* malformed before a root: "" (the importer reports it) */
}
