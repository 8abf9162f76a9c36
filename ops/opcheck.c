/*
 * opcheck.c — the operator checker: libclang (dlopen'ed, declared in clang_abi.h) parses the file
 * with the system's C headers, a walk over the AST accepts only what computes the same bits on
 * the CPU and in CUDA, and the accepted functions are printed again from their tokens as the C
 * and CUDA sources that get compiled (so both compile the very text that was checked).
 */
#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clang_abi.h"
#include "dl.h"
#include "err.h"
#include "fileio.h"
#include "ops.h"
#include "params.h"

/* ---- libclang, loaded once ---- */

static sc_clang CL;
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
  cl_ok = 1;
}

/* ---- the checker's state ---- */

#define MAXFN 64
typedef struct fn {
  char name[128];
  CXCursor cur;
  int defined, reached, state; /* state: 0 unchecked, 1 on the call stack, 2 checked */
} fn;

typedef struct ck {
  CXTranslationUnit tu;
  const char *path;
  fn f[MAXFN];
  int nf;
  int cur;                   /* the function being checked */
  char *msg;                 /* diagnostics, one per line */
  size_t len, cap;
  int nerr;
  int oom;
} ck;

static void addf(ck *k, CXCursor c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void addf(ck *k, CXCursor c, const char *fmt, ...) {
  if (k->nerr++ >= 30) return;
  unsigned line = 0, col = 0;
  CL.getExpansionLocation(CL.getCursorLocation(c), NULL, &line, &col, NULL);
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%s:%u:%u: ", k->path, line, col);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  size_t m = strlen(buf);
  if (k->len + m + 2 > k->cap) {
    size_t cap = (k->cap + m + 2) * 2;
    char *p = realloc(k->msg, cap);
    if (!p) { k->oom = 1; return; }
    k->msg = p;
    k->cap = cap;
  }
  memcpy(k->msg + k->len, buf, m);
  k->len += m;
  k->msg[k->len++] = '\n';
  k->msg[k->len] = 0;
}

/* The spelling of a cursor into buf. */
static const char *spell(CXCursor c, char *buf, size_t cap) {
  CXString s = CL.getCursorSpelling(c);
  const char *p = CL.getCString(s);
  snprintf(buf, cap, "%s", p ? p : "");
  CL.disposeString(s);
  return buf;
}
static const char *type_spell(CXType t, char *buf, size_t cap) {
  CXString s = CL.getTypeSpelling(t);
  const char *p = CL.getCString(s);
  snprintf(buf, cap, "%s", p ? p : "?");
  CL.disposeString(s);
  return buf;
}

/* The allowed value types (canonical: int32_t is int, int64_t is long on LP64). */
static int type_ok(CXType t) {
  int k = CL.getCanonicalType(t).kind;
  return k == CXType_Int || k == CXType_Long || k == CXType_LongLong || k == CXType_Float || k == CXType_Double;
}
static schedc_status dtype_of(CXType t, schedc_dtype *dt) {
  switch (CL.getCanonicalType(t).kind) {
  case CXType_Float: *dt = SCHEDC_F32; return SCHEDC_OK;
  case CXType_Double: *dt = SCHEDC_F64; return SCHEDC_OK;
  case CXType_Int: *dt = SCHEDC_I32; return SCHEDC_OK;
  case CXType_Long: case CXType_LongLong: *dt = SCHEDC_I64; return SCHEDC_OK;
  default: return SCHEDC_EINVAL;
  }
}

#define TYPES_ALLOWED "float, double, int32_t or int64_t"

/* A declaration's type (parameter, local): scalar of an allowed type, not volatile. */
static void check_decl_type(ck *k, CXCursor c, const char *what) {
  char nm[128], ty[128];
  CXType t = CL.getCursorType(c);
  CXType ct = CL.getCanonicalType(t);
  spell(c, nm, sizeof nm);
  type_spell(t, ty, sizeof ty);
  if (CL.isVolatileQualifiedType(t))
    addf(k, c, "%s '%s' is volatile: an operator is a pure function of its operands; drop 'volatile'", what, nm);
  else if (ct.kind == CXType_Pointer)
    addf(k, c, "%s '%s' is a pointer (%s): operators take and return scalars; use a local of type " TYPES_ALLOWED, what,
         nm, ty);
  else if (ct.kind >= CXType_ConstantArray && ct.kind <= CXType_DependentSizedArray)
    addf(k, c, "%s '%s' is an array (%s): operators use scalars only; use locals of type " TYPES_ALLOWED, what, nm, ty);
  else if (!type_ok(t))
    addf(k, c, "%s '%s' has type %s: operators compute in " TYPES_ALLOWED " only", what, nm, ty);
}

/* The first token of a cursor's extent (an operator's spelling for unary expressions). */
static void first_token(ck *k, CXCursor c, char *buf, size_t cap) {
  CXToken *t = NULL;
  unsigned n = 0;
  buf[0] = 0;
  CL.tokenize(k->tu, CL.getCursorExtent(c), &t, &n);
  if (n) {
    CXString s = CL.getTokenSpelling(k->tu, t[0]);
    snprintf(buf, cap, "%s", CL.getCString(s));
    CL.disposeString(s);
  }
  if (t) CL.disposeTokens(k->tu, t, n);
}

/* The operator token of a binary expression: the token after its left operand's tokens. */
static int first_child(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  *(CXCursor *)data = c;
  return CXChildVisit_Break;
}
static void binary_token(ck *k, CXCursor c, char *buf, size_t cap) {
  CXCursor lhs;
  memset(&lhs, 0, sizeof lhs);
  buf[0] = 0;
  CL.visitChildren(c, first_child, &lhs);
  CXToken *t = NULL, *tl = NULL;
  unsigned n = 0, nl = 0;
  CL.tokenize(k->tu, CL.getCursorExtent(c), &t, &n);
  CL.tokenize(k->tu, CL.getCursorExtent(lhs), &tl, &nl);
  if (nl < n) {
    CXString s = CL.getTokenSpelling(k->tu, t[nl]);
    snprintf(buf, cap, "%s", CL.getCString(s));
    CL.disposeString(s);
  }
  if (t) CL.disposeTokens(k->tu, t, n);
  if (tl) CL.disposeTokens(k->tu, tl, nl);
}

/* The math functions an operator may call (and their f forms), with their parameter lists: the
 * checker's allowance and the CUDA text's C-semantics wrappers (print_fn) come from this list. */
#define SC_MATH_OK(X)                                                                                  \
  X(fabs, "double a", "a") X(fmin, "double a, double b", "a, b") X(fmax, "double a, double b", "a, b")  \
  X(copysign, "double a, double b", "a, b") X(sqrt, "double a", "a")                                    \
  X(fma, "double a, double b, double c", "a, b, c") X(floor, "double a", "a") X(ceil, "double a", "a")  \
  X(trunc, "double a", "a") X(rint, "double a", "a")
#define SC_MATH_NAME(n, params, args) #n,
static const char *const math_ok[] = {SC_MATH_OK(SC_MATH_NAME)};
static const char *const transcendental[] = {
    "exp", "exp2", "expm1", "exp10", "log", "log2", "log10", "log1p", "pow", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "cbrt", "hypot", "erf", "erfc", "tgamma", "lgamma",
    "rsqrt", "sincos", "logb", "fmod", "remainder"};

/* name is base or base+"f" for a base of list. */
static int in_math(const char *name, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(list[i]);
    if (!strncmp(name, list[i], l) && (name[l] == 0 || (name[l] == 'f' && name[l + 1] == 0))) return 1;
  }
  return 0;
}

static int find_fn(ck *k, const char *name) {
  for (int i = 0; i < k->nf; i++)
    if (!strcmp(k->f[i].name, name)) return i;
  return -1;
}

static void check_function(ck *k, int i);
static int visit_body(CXCursor c, CXCursor parent, CXClientData data);

static void check_call(ck *k, CXCursor c) {
  CXCursor ref = CL.getCursorReferenced(c);
  char nm[128];
  spell(ref, nm, sizeof nm);
  if (CL.getCursorKind(ref) != CXCursor_FunctionDecl) {
    addf(k, c, "call through an expression: an operator may call only the file's own functions and fabs, fmin, fmax, "
         "copysign, sqrt, fma, floor, ceil, trunc, rint (and their f forms)");
    return;
  }
  int j = find_fn(k, nm);
  if (j >= 0 && k->f[j].defined) {
    if (k->f[j].state == 1)
      addf(k, c, "recursion: '%s' calls '%s' while it is running: operators may not recurse (CUDA's stack is small "
           "and fixed); write it as straight-line code", k->f[k->cur].name, nm);
    else if (k->f[j].state == 0) {
      int save = k->cur;
      check_function(k, j);
      k->cur = save;
    }
  } else if (in_math(nm, transcendental, sizeof transcendental / sizeof transcendental[0])) {
    addf(k, c, "call to %s: transcendental functions are not allowed, because the CPU's libm and CUDA's device library "
         "round them differently, so CPU and GPU bits would differ; use fabs, fmin, fmax, copysign, sqrt, fma, floor, "
         "ceil, trunc, rint (correctly rounded on both) or arithmetic", nm);
  } else if (!in_math(nm, math_ok, sizeof math_ok / sizeof math_ok[0])) {
    addf(k, c, "call to %s: an operator may call only functions defined in its file and fabs, fmin, fmax, copysign, "
         "sqrt, fma, floor, ceil, trunc, rint (and their f forms), which give the same bits on the CPU and the GPU", nm);
  }
  int na = CL.Cursor_getNumArguments(c);
  for (int a = 0; a < na; a++) {
    CXCursor arg = CL.Cursor_getArgument(c, (unsigned)a);
    if (visit_body(arg, c, k) == CXChildVisit_Recurse) CL.visitChildren(arg, visit_body, k);
  }
}

static int is_expr(int kind) { return kind >= CXCursor_FirstExpr && kind <= CXCursor_LastExpr; }

static int visit_body(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  ck *k = data;
  int kind = CL.getCursorKind(c);
  char nm[128], ty[128];
  if (kind >= CXCursor_FirstAttr && kind <= CXCursor_LastAttr) return CXChildVisit_Continue;
  switch (kind) {
  case CXCursor_CompoundStmt: case CXCursor_IfStmt: case CXCursor_ReturnStmt: case CXCursor_DeclStmt:
  case CXCursor_NullStmt: case CXCursor_TypeRef:
    return CXChildVisit_Recurse;
  case CXCursor_ForStmt: case CXCursor_WhileStmt: case CXCursor_DoStmt:
    addf(k, c, "loop: operators have no loops (schedc runs the element loop; an operator combines two values in "
         "straight-line code with if/else)");
    return CXChildVisit_Continue;
  case CXCursor_GotoStmt: case CXCursor_IndirectGotoStmt: case CXCursor_LabelStmt:
    addf(k, c, "goto and labels are not allowed: use if/else");
    return CXChildVisit_Continue;
  case CXCursor_SwitchStmt:
    addf(k, c, "switch is not allowed: use if/else");
    return CXChildVisit_Continue;
  case CXCursor_GCCAsmStmt: case CXCursor_MSAsmStmt:
    addf(k, c, "inline assembly is not allowed: it cannot run on both the CPU and the GPU; write C arithmetic");
    return CXChildVisit_Continue;
  case CXCursor_VarDecl: {
    int sc = CL.Cursor_getStorageClass(c);
    if (sc == CX_SC_Static || sc == CX_SC_Extern) {
      addf(k, c, "%s variable '%s': operators keep no state between calls (CPU and GPU would see different values); "
           "use a local variable or a parameter", sc == CX_SC_Static ? "static" : "extern", spell(c, nm, sizeof nm));
      return CXChildVisit_Continue;
    }
    check_decl_type(k, c, "local variable");
    return CXChildVisit_Recurse;
  }
  case CXCursor_DeclRefExpr: {
    CXCursor ref = CL.getCursorReferenced(c);
    int rk = CL.getCursorKind(ref);
    spell(c, nm, sizeof nm);
    if (rk == CXCursor_VarDecl) {
      int sc = CL.Cursor_getStorageClass(ref);
      int global = CL.getCursorKind(CL.getCursorSemanticParent(ref)) != CXCursor_FunctionDecl; /* locals belong to a function */
      if (global || sc == CX_SC_Static || sc == CX_SC_Extern) {
        addf(k, c, "'%s' is a %s variable: an operator may read and write only its parameters and local variables "
             "(shared state makes the result depend on call order, and the GPU has its own copy)", nm,
             global ? "global" : "static");
        return CXChildVisit_Continue;
      }
    } else if (rk == CXCursor_FunctionDecl) {
      addf(k, c, "function '%s' used as a value: call it instead", nm);
      return CXChildVisit_Continue;
    } else if (rk != CXCursor_ParmDecl) {
      addf(k, c, "'%s' is not a parameter or a local variable: operators use only their own values and literals", nm);
      return CXChildVisit_Continue;
    }
    break;
  }
  case CXCursor_CallExpr:
    check_call(k, c);
    return CXChildVisit_Continue;
  case CXCursor_UnaryOperator: {
    first_token(k, c, nm, sizeof nm);
    if (!strcmp(nm, "&")) {
      addf(k, c, "address-of (&): operators use values, never addresses");
      return CXChildVisit_Continue;
    }
    if (!strcmp(nm, "*")) {
      addf(k, c, "dereference (*): operators have no pointers; use values");
      return CXChildVisit_Continue;
    }
    break;
  }
  case CXCursor_BinaryOperator: case CXCursor_CompoundAssignOperator: {
    /* integer division by zero traps on the CPU and yields a value on the GPU, as does
     * INT_MIN / -1: no input may make the two sides differ, so neither is allowed */
    int rk = CL.getCanonicalType(CL.getCursorType(c)).kind;
    if (rk == CXType_Int || rk == CXType_Long || rk == CXType_LongLong) {
      binary_token(k, c, nm, sizeof nm);
      if (!strcmp(nm, "/") || !strcmp(nm, "%") || !strcmp(nm, "/=") || !strcmp(nm, "%=")) {
        addf(k, c, "integer '%s': division by zero traps on the CPU but gives a value on the GPU (and INT_MIN / -1 "
             "likewise), so integer division and remainder are not allowed; use shifts, masks or a float "
             "operator", nm);
        return CXChildVisit_Recurse; /* and whatever else its operands hold */
      }
    }
    break;
  }
  case CXCursor_UnaryExpr:
    addf(k, c, "sizeof/alignof are not allowed: an operator computes on values of " TYPES_ALLOWED);
    return CXChildVisit_Continue;
  case CXCursor_ArraySubscriptExpr:
    addf(k, c, "array subscript: operators use scalars only");
    return CXChildVisit_Continue;
  case CXCursor_MemberRefExpr:
    addf(k, c, "struct member: operators use scalars of " TYPES_ALLOWED " only");
    return CXChildVisit_Continue;
  case CXCursor_StringLiteral:
    addf(k, c, "string literal: operators use numbers only");
    return CXChildVisit_Continue;
  case CXCursor_UnexposedExpr: case CXCursor_IntegerLiteral: case CXCursor_FloatingLiteral:
  case CXCursor_CharacterLiteral: case CXCursor_ParenExpr: case CXCursor_ConditionalOperator:
  case CXCursor_CStyleCastExpr:
    break;
  default:
    if (is_expr(kind)) addf(k, c, "this kind of expression is not allowed in an operator: use arithmetic, comparisons, "
                            "logical, conditional, bitwise and shift operators, casts and calls");
    else addf(k, c, "this statement is not allowed in an operator: use declarations, if/else, expressions and return");
    return CXChildVisit_Continue;
  }
  /* every value an expression computes has an allowed scalar type */
  CXType t = CL.getCursorType(c);
  if (is_expr(kind) && !type_ok(t)) {
    int tk = CL.getCanonicalType(t).kind;
    type_spell(t, ty, sizeof ty);
    if (tk == CXType_Pointer) addf(k, c, "pointer value (%s): operators have no pointers; use values", ty);
    else addf(k, c, "value of type %s: operators compute in " TYPES_ALLOWED " only (cast to one of them)", ty);
    return CXChildVisit_Continue;
  }
  return CXChildVisit_Recurse;
}

static int visit_params(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  ck *k = data;
  int kind = CL.getCursorKind(c);
  if (kind == CXCursor_ParmDecl) check_decl_type(k, c, "parameter");
  else if (kind == CXCursor_CompoundStmt) CL.visitChildren(c, visit_body, k);
  return CXChildVisit_Continue;
}

static void check_function(ck *k, int i) {
  k->cur = i;
  k->f[i].state = 1;
  k->f[i].reached = 1;
  char ty[128];
  CXCursor c = k->f[i].cur;
  if (CL.Cursor_getStorageClass(c) == CX_SC_Extern) { /* fine: plain 'extern' on a definition */ }
  CXType rt = CL.getCursorResultType(c);
  if (!type_ok(rt)) addf(k, c, "'%s' returns %s: operators and the functions they call return " TYPES_ALLOWED,
                         k->f[i].name, type_spell(rt, ty, sizeof ty));
  CL.visitChildren(c, visit_params, k);
  k->f[i].state = 2;
}

/* Top level: functions only (and #include of system headers). */
static int visit_top(CXCursor c, CXCursor parent, CXClientData data) {
  (void)parent;
  ck *k = data;
  if (!CL.Location_isFromMainFile(CL.getCursorLocation(c))) return CXChildVisit_Continue;
  char nm[128];
  int kind = CL.getCursorKind(c);
  switch (kind) {
  case CXCursor_InclusionDirective: return CXChildVisit_Continue;
  case CXCursor_MacroDefinition:
    addf(k, c, "#define %s: operator files hold no macros (the function is compiled for the CPU and for CUDA from its "
         "own text); write the value or a function", spell(c, nm, sizeof nm));
    return CXChildVisit_Continue;
  case CXCursor_MacroExpansion:
    addf(k, c, "macro %s: write its value instead (an operator is compiled for CUDA without the C headers, so "
         "macros such as INFINITY or NAN do not exist there; compare with a literal such as 3.4028235e38f)",
         spell(c, nm, sizeof nm));
    return CXChildVisit_Continue;
  case CXCursor_FunctionDecl: {
    spell(c, nm, sizeof nm);
    int j = find_fn(k, nm);
    if (j < 0) {
      if (k->nf == MAXFN) { addf(k, c, "more than %d functions in one operator file", MAXFN); return CXChildVisit_Continue; }
      j = k->nf++;
      snprintf(k->f[j].name, sizeof k->f[j].name, "%s", nm);
      k->f[j].cur = c;
    }
    if (CL.isCursorDefinition(c)) {
      k->f[j].cur = c;
      k->f[j].defined = 1;
    }
    return CXChildVisit_Continue;
  }
  case CXCursor_VarDecl:
    addf(k, c, "global variable '%s': operators keep no state (CPU and GPU would each have their own copy); use a "
         "local variable, a parameter or a literal", spell(c, nm, sizeof nm));
    return CXChildVisit_Continue;
  default:
    addf(k, c, "only functions may be declared in an operator file (no types, typedefs or variables): operators use "
         TYPES_ALLOWED);
    return CXChildVisit_Continue;
  }
}

/* ---- printing the checked functions again, from their tokens ---- */

typedef struct sb { char *p; size_t n, cap; int oom; } sb;
static void put(sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(sb *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (m < 0) { b->oom = 1; return; }
  if (b->n + (size_t)m + 1 > b->cap) {
    size_t cap = (b->n + (size_t)m + 1) * 2;
    char *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return; }
    b->p = p;
    b->cap = cap;
  }
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
  va_end(ap);
  b->n += (size_t)m;
}

static int is_math_base(const char *name) {
  for (size_t i = 0; i < sizeof math_ok / sizeof math_ok[0]; i++)
    if (!strcmp(name, math_ok[i])) return 1;
  return 0;
}

/* One function, its names renamed sc_u_*, storage keywords dropped; cuda: device types, and the
 * double math functions called as in C (sc_cm_*, emit_sources). */
static void print_fn(ck *k, sb *b, int i, int cuda, int proto) {
  CXToken *t = NULL;
  unsigned n = 0;
  CL.tokenize(k->tu, CL.getCursorExtent(k->f[i].cur), &t, &n);
  put(b, "%s", cuda ? "static __device__ __forceinline__ " : "static inline ");
  for (unsigned j = 0; j < n; j++) {
    int kind = CL.getTokenKind(t[j]);
    CXString s = CL.getTokenSpelling(k->tu, t[j]);
    const char *p = CL.getCString(s);
    if (kind == CXToken_Comment || !strcmp(p, "static") || !strcmp(p, "inline") || !strcmp(p, "extern")) {
      CL.disposeString(s);
      continue;
    }
    if (proto && !strcmp(p, "{")) { CL.disposeString(s); break; }
    if (kind == CXToken_Identifier && find_fn(k, p) >= 0 && k->f[find_fn(k, p)].reached) put(b, "sc_u_%s", p);
    /* C's fma(x, y, z) is the double function whatever its arguments; CUDA C++ overloads it
     * (fma(float, float, float) is fmaf: one rounding, not two), and sqrt(x) * y would be float
     * arithmetic there, double in C. The double forms go through wrappers that take doubles. */
    else if (cuda && kind == CXToken_Identifier && find_fn(k, p) < 0 && is_math_base(p)) put(b, "sc_cm_%s", p);
    else if (cuda && !strcmp(p, "int32_t")) put(b, "int");
    else if (cuda && !strcmp(p, "int64_t")) put(b, "long long");
    else put(b, "%s", p);
    put(b, "%s", !strcmp(p, "{") || !strcmp(p, ";") || !strcmp(p, "}") ? "\n" : " ");
    CL.disposeString(s);
  }
  if (proto) put(b, ";\n");
  else put(b, "\n");
  if (t) CL.disposeTokens(k->tu, t, n);
}

static const char *ctype(schedc_dtype t, int cuda) {
  switch (t) {
  case SCHEDC_F32: return "float";
  case SCHEDC_F64: return "double";
  case SCHEDC_I32: return cuda ? "int" : "int32_t";
  default: return cuda ? "long long" : "int64_t";
  }
}

static void emit_sources(ck *k, int target, schedc_dtype dt, sb *cpu, sb *cu) {
  const char *T = ctype(dt, 0), *name = k->f[target].name;
  int isf = dt == SCHEDC_F32 || dt == SCHEDC_F64;
  /* no path in the text: the same operator from any folder hits the same cache entry and hash */
  put(cpu, "/* generated by schedc from operator %s (the checked text); compiled with -ffp-contract=off */\n"
      "#include <math.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <string.h>\n\n", name);
  for (int i = 0; i < k->nf; i++)
    if (k->f[i].reached) print_fn(k, cpu, i, 0, 1);
  for (int i = 0; i < k->nf; i++)
    if (k->f[i].reached) print_fn(k, cpu, i, 0, 0);
  /* NaN results become the default NaN, as for the built-in ops: the payload of a NaN may
   * depend on operand order and differs between CPU and GPU. */
  put(cpu, "static inline %s sc_op1(%s a, %s b) {\n  %s r = sc_u_%s(a, b);\n", T, T, T, T, name);
  if (dt == SCHEDC_F32) put(cpu, "  if (r != r) { uint32_t q = 0x7fc00000u; memcpy(&r, &q, 4); }\n");
  if (dt == SCHEDC_F64) put(cpu, "  if (r != r) { uint64_t q = 0x7ff8000000000000ull; memcpy(&r, &q, 8); }\n");
  put(cpu, "  return r;\n}\n\n"
      "/* d[i] = (a[i] op s[0][i]) op ... s[n-1][i], blocked like sc_reduce_chain */\n"
      "__attribute__((visibility(\"default\"))) void sc_op_chain(void *dv, const void *av, const void *const *s, int n, "
      "size_t len) {\n"
      "  %s *d = dv;\n  const %s *a = av;\n"
      "  for (size_t lo = 0; lo < len; lo += 512) {\n"
      "    size_t hi = lo + 512 < len ? lo + 512 : len;\n"
      "    %s acc[512];\n"
      "    for (size_t i = lo; i < hi; i++) acc[i - lo] = a[i];\n"
      "    for (int k = 0; k < n; k++) {\n"
      "      const %s *sk = (const %s *)s[k];\n"
      "      for (size_t i = lo; i < hi; i++) acc[i - lo] = sc_op1(acc[i - lo], sk[i]);\n"
      "    }\n"
      "    for (size_t i = lo; i < hi; i++) d[i] = acc[i - lo];\n"
      "  }\n}\n\n"
      "__attribute__((visibility(\"default\"))) void sc_op_pairs(const void *av, const void *bv, void *rv, size_t n) {\n"
      "  const %s *a = av, *b = bv;\n  %s *r = rv;\n"
      "  for (size_t i = 0; i < n; i++) r[i] = sc_op1(a[i], b[i]);\n}\n",
      T, T, T, T, T, T, T);
  const char *U = ctype(dt, 1);
  put(cu, "/* custom operator %s (checked by schedc; no fma: --fmad=false) */\n", name);
  sb fns = {0}; /* the functions first, so that only the wrappers they call go before them */
  for (int i = 0; i < k->nf; i++)
    if (k->f[i].reached) print_fn(k, &fns, i, 1, 1);
  for (int i = 0; i < k->nf; i++)
    if (k->f[i].reached) print_fn(k, &fns, i, 1, 0);
  cu->oom |= fns.oom;
#define SC_MATH_WRAP(n, params, args)                                                                  \
  if (fns.p && strstr(fns.p, "sc_cm_" #n " "))                                                          \
    put(cu, "static __device__ __forceinline__ double sc_cm_" #n "(" params ") { return " #n "(" args "); }\n");
  SC_MATH_OK(SC_MATH_WRAP)
#undef SC_MATH_WRAP
  if (fns.p) put(cu, "%s", fns.p);
  free(fns.p);
  put(cu, "static __device__ __forceinline__ %s sc_custom_op(%s a, %s b) {\n  %s r = sc_u_%s(a, b);\n", U, U, U, U, name);
  if (isf) put(cu, "  return r != r ? %s : r; /* the default NaN, as on the CPU */\n}\n\n",
               dt == SCHEDC_F64 ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)");
  else put(cu, "  return r;\n}\n\n");
}

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
  pthread_once(&cl_once, cl_load);
  if (!cl_ok) return sc_err(SCHEDC_EUNAVAIL, "%s", cl_why);
  size_t flen;
  char *text = sc_read_file(path, &flen);
  if (!text) return sc_err(SCHEDC_EIO, "%s: cannot read the operator file", path);
  free(text);
  char inc[600];
  resource_dir(inc, sizeof inc);
  const char *args[] = {"-x", "c", "-std=c11", "-isystem", inc};
  CXIndex idx = CL.createIndex(0, 0);
  ck *k = calloc(1, sizeof *k);
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
      size_t m = strlen(msg);
      char *p = realloc(k->msg, k->len + m + 2);
      if (p) { k->msg = p; memcpy(p + k->len, msg, m); k->len += m; p[k->len++] = '\n'; p[k->len] = 0; }
      k->nerr++;
    }
    CL.disposeDiagnostic(d);
  }
  int target = -1;
  schedc_dtype dt = SCHEDC_F32;
  if (!k->nerr) {
    CL.visitChildren(CL.getTranslationUnitCursor(k->tu), visit_top, k);
    target = find_fn(k, name);
    if (target < 0 || !k->f[target].defined) {
      char list[512] = "";
      for (int i = 0; i < k->nf; i++)
        if (k->f[i].defined && strlen(list) + strlen(k->f[i].name) + 3 < sizeof list)
          strcat(strcat(list, list[0] ? ", " : ""), k->f[i].name);
      st = sc_err(SCHEDC_EINVAL, "%s: no function '%s' defined here (functions: %s)", path, name, list[0] ? list : "none");
      goto done;
    }
    CXCursor c = k->f[target].cur;
    CXType rt = CL.getCursorResultType(c);
    int np = CL.Cursor_getNumArguments(c);
    char ty[128];
    if (dtype_of(rt, &dt) != SCHEDC_OK || np != 2 || !type_ok(CL.getCursorType(CL.Cursor_getArgument(c, 0))) ||
        !type_ok(CL.getCursorType(CL.Cursor_getArgument(c, 1))) ||
        CL.getCanonicalType(CL.getCursorType(CL.Cursor_getArgument(c, 0))).kind != CL.getCanonicalType(rt).kind ||
        CL.getCanonicalType(CL.getCursorType(CL.Cursor_getArgument(c, 1))).kind != CL.getCanonicalType(rt).kind)
      addf(k, c, "'%s' must be `T %s(T a, T b)` with T one of " TYPES_ALLOWED " (it is %s)", name, name,
           type_spell(CL.getCursorType(c), ty, sizeof ty));
    unsigned line = 0, col = 0;
    CL.getExpansionLocation(CL.getCursorLocation(c), NULL, &line, &col, NULL);
    out->line = line;
    out->col = col;
    check_function(k, target);
  }
  if (k->oom) { st = sc_err(SCHEDC_ENOMEM, "out of memory"); goto done; }
  if (k->nerr) {
    if (k->nerr > 30) {
      char more[64];
      snprintf(more, sizeof more, "(%d more)\n", k->nerr - 30);
      char *p = realloc(k->msg, k->len + strlen(more) + 1);
      if (p) { k->msg = p; strcpy(p + k->len, more); k->len += strlen(more); }
    }
    if (k->len && k->msg[k->len - 1] == '\n') k->msg[--k->len] = 0;
    st = sc_err_str(SCHEDC_EINVAL, k->msg);
    goto done;
  }
  sb cpu = {0}, cu = {0};
  emit_sources(k, target, dt, &cpu, &cu);
  if (cpu.oom || cu.oom) {
    free(cpu.p);
    free(cu.p);
    st = sc_err(SCHEDC_ENOMEM, "out of memory");
    goto done;
  }
  out->type = dt;
  out->cpu = cpu.p;
  out->cuda = cu.p;
done:
  CL.disposeTranslationUnit(k->tu);
  CL.disposeIndex(idx);
  free(k->msg);
  free(k);
  return st;
}

void sc_opsrc_free(sc_opsrc *s) {
  free(s->cpu);
  free(s->cuda);
  s->cpu = s->cuda = NULL;
}
