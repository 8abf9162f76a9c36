/*
 * opcheck.c — the operator checker's entry (sc_ops_check): libclang (opclang.c) parses the file
 * with the system's C headers; a file that is not valid C stops there; the rules (oprules.c)
 * accept only what computes the same bits on the CPU and in CUDA; the accepted functions are
 * printed again from their tokens (opprint.c) as the C and CUDA sources that get compiled.
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "fileio.h"
#include "opcheck.h"

/* Where libclang's own headers (stddef.h, stdint.h's builtins) are, when it does not find them
 * from its own location (a libclang1 package without the clang driver beside it). */
static void resource_dir(char *buf, size_t cap) {
  glob_t g;
  buf[0] = 0;
  if (glob("/usr/lib/llvm-*/lib/clang/*/include/stddef.h", 0, NULL, &g) == 0 && g.gl_pathc) {
    snprintf(buf, cap, "%s", g.gl_pathv[g.gl_pathc - 1]);
    char *s = strrchr(buf, '/');
    if (s) *s = 0;
  }
  globfree(&g);
}

schedc_status sc_ops_check(const char *path, const char *name, sc_opsrc *out) {
  memset(out, 0, sizeof *out);
  const char *why = sc_ops_clang_load();
  if (why) return sc_err(SCHEDC_EUNAVAIL, "%s", why);
  size_t flen;
  char *text = sc_read_file(path, &flen);
  if (!text) return sc_err(SCHEDC_EIO, "%s: cannot read the operator file", path);
  free(text);
  char inc[600];
  resource_dir(inc, sizeof inc);
  const char *args[] = {"-x", "c", "-std=c11", "-isystem", inc};
  CXIndex idx = CL.createIndex(0, 0);
  sc_opck *k = calloc(1, sizeof *k);
  if (!k) { CL.disposeIndex(idx); return sc_err(SCHEDC_ENOMEM, "out of memory"); }
  k->path = path;
  int rc = CL.parseTranslationUnit2(idx, path, args, inc[0] ? 5 : 3, NULL, 0, CXTranslationUnit_DetailedPreprocessingRecord,
                                    &k->tu);
  if (rc || !k->tu) {
    CL.disposeIndex(idx);
    free(k);
    return sc_err(SCHEDC_EINVAL, "%s: libclang could not parse the file (error %d)", path, rc);
  }
  schedc_status st = SCHEDC_OK;
  /* the compiler's own errors first: a file that is not valid C is not checked further */
  for (unsigned i = 0, nd = CL.getNumDiagnostics(k->tu); i < nd; i++) {
    CXDiagnostic d = CL.getDiagnostic(k->tu, i);
    if (CL.getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
      unsigned line = 0, col = 0;
      CL.getExpansionLocation(CL.getDiagnosticLocation(d), NULL, &line, &col, NULL);
      CXString s = CL.getDiagnosticSpelling(d);
      char msg[600];
      snprintf(msg, sizeof msg, "%s:%u:%u: error: %s (an operator file must be valid C11)", path, line, col,
               CL.getCString(s));
      CL.disposeString(s);
      sc_strbuf_puts(&k->msg, msg);
      sc_strbuf_add(&k->msg, "\n", 1);
      k->nerr++;
    }
    CL.disposeDiagnostic(d);
  }
  int target = -1;
  schedc_dtype dt = SCHEDC_F32;
  if (!k->nerr && (st = sc_opck_rules(k, name, &target, &dt, out)) != SCHEDC_OK) goto done;
  if (k->nerr > 30) sc_strbuf_printf(&k->msg, "(%d more)\n", k->nerr - 30);
  if (k->msg.oom) { st = sc_err(SCHEDC_ENOMEM, "out of memory"); goto done; }
  if (k->nerr) {
    if (k->msg.len && k->msg.p[k->msg.len - 1] == '\n') k->msg.p[--k->msg.len] = 0;
    st = sc_err_str(SCHEDC_EINVAL, k->msg.p);
    goto done;
  }
  sc_strbuf cpu = SC_STRBUF_INIT, cu = SC_STRBUF_INIT;
  sc_opck_emit(k, target, dt, &cpu, &cu);
  if (cpu.oom || cu.oom) {
    sc_strbuf_free(&cpu);
    sc_strbuf_free(&cu);
    st = sc_err(SCHEDC_ENOMEM, "out of memory");
    goto done;
  }
  out->type = dt;
  out->cpu = cpu.p;
  out->cuda = cu.p;
done:
  CL.disposeTranslationUnit(k->tu);
  CL.disposeIndex(idx);
  sc_strbuf_free(&k->msg);
  free(k);
  return st;
}

void sc_opsrc_free(sc_opsrc *s) {
  free(s->cpu);
  free(s->cuda);
  s->cpu = s->cuda = NULL;
}
