/*
 * opclang.c — libclang for the operator checker: loaded once with dlopen (the candidates below,
 * or SCHEDC_LIBCLANG) and its functions resolved into sc_ops_cl (opcheck.h, declared in
 * clang_abi.h: no clang headers are needed to build); or why it cannot be, with what to install.
 */
#include <pthread.h>
#include <stdio.h>

#include "dl.h"
#include "opcheck.h"
#include "params.h"

sc_clang sc_ops_cl;
static void *cl_lib; /* the library loaded (kept open: its functions are in sc_ops_cl) */
static int cl_ok;
static char cl_why[1024];
static pthread_once_t cl_once = PTHREAD_ONCE_INIT;

static void cl_load(void) {
  const char *cands[] = {sc_param_str(SC_P_SCHEDC_LIBCLANG), "libclang-16.so.1", "libclang.so.1", "libclang-18.so.1",
                         "libclang-17.so.1", "libclang-15.so.1", "libclang-14.so.1", "libclang-16.so", "libclang.so"};
  char tried[512];
  void *lib = sc_dl_first(cands, sizeof cands / sizeof cands[0], tried, sizeof tried);
  if (!lib) {
    snprintf(cl_why, sizeof cl_why, "custom operators need libclang to check their source, and none loads (tried %s): "
             "install it (Debian/Ubuntu: apt-get install libclang1-16, or libclang-16-dev) or set SCHEDC_LIBCLANG to "
             "the library's path", tried);
    return;
  }
#define S(f) {(void **)&CL.f, "clang_" #f}
  const sc_dlsym syms[] = {
      S(createIndex), S(disposeIndex), S(parseTranslationUnit2), S(disposeTranslationUnit),
      S(getTranslationUnitCursor), S(visitChildren), S(getCursorKind), S(getCursorLocation), S(getCursorExtent),
      S(getExpansionLocation), S(Location_isFromMainFile), S(getCursorSpelling), S(getCString), S(disposeString),
      S(getCursorType), S(getCanonicalType), S(getCursorResultType), S(getTypeSpelling), S(isVolatileQualifiedType),
      S(getCursorReferenced), S(getCursorSemanticParent), S(Cursor_getStorageClass), S(isCursorDefinition),
      S(Cursor_getNumArguments), S(Cursor_getArgument), S(equalCursors), S(getNumDiagnostics), S(getDiagnostic),
      S(getDiagnosticSeverity), S(getDiagnosticSpelling), S(getDiagnosticLocation), S(disposeDiagnostic),
      S(tokenize), S(disposeTokens), S(getTokenSpelling), S(getTokenKind), S(getClangVersion)};
#undef S
  const char *miss = sc_dl_syms(lib, syms, sizeof syms / sizeof syms[0]);
  if (miss) {
    snprintf(cl_why, sizeof cl_why, "the libclang found (%s) lacks %s: install libclang1-16 (apt-get install "
             "libclang1-16) or set SCHEDC_LIBCLANG to a newer libclang", tried, miss);
    return;
  }
  cl_lib = lib;
  cl_ok = 1;
}

const char *sc_ops_clang_load(void) {
  pthread_once(&cl_once, cl_load);
  return cl_ok ? NULL : cl_why;
}

void sc_ops_clang_probe(sc_probe *p) {
  const char *why = sc_ops_clang_load();
  p->built = 1;
  p->found = !why;
  if (why) {
    snprintf(p->why, sizeof p->why, "%s", why);
    return;
  }
  sc_dl_handle_path(cl_lib, p->path, sizeof p->path);
  CXString v = CL.getClangVersion();
  const char *t = CL.getCString(v);
  snprintf(p->version, sizeof p->version, "%s", t ? t : "");
  CL.disposeString(v);
}
