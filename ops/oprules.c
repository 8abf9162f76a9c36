/*
 * oprules.c — what an operator may contain (docs/ops.md): a walk over libclang's AST of the file
 * that accepts only what computes the same bits on the CPU and in CUDA (scalars of four types,
 * straight-line code, no state, no pointers, no integer division, only correctly rounded math
 * functions, no recursion), each broken rule a "file:line:col: message" line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "opcheck.h"

static void addf(sc_opck *k, CXCursor c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void addf(sc_opck *k, CXCursor c, const char *fmt, ...) {
  if (k->nerr++ >= 30) return;
  unsigned line = 0, col = 0;
  CL.getExpansionLocation(CL.getCursorLocation(c), NULL, &line, &col, NULL);
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "%s:%u:%u: ", k->path, line, col);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  sc_strbuf_puts(&k->msg, buf);
  sc_strbuf_add(&k->msg, "\n", 1);
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

/* A declaration's type (parameter, local): scalar of an allowed type, not volatile. */
static void check_decl_type(sc_opck *k, CXCursor c, const char *what) {
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
static void first_token(sc_opck *k, CXCursor c, char *buf, size_t cap) {
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
static void binary_token(sc_opck *k, CXCursor c, char *buf, size_t cap) {
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

int sc_opck_find(const sc_opck *k, const char *name) {
  for (int i = 0; i < k->nf; i++)
    if (!strcmp(k->f[i].name, name)) return i;
  return -1;
}

static void check_function(sc_opck *k, int i);
static int visit_body(CXCursor c, CXCursor parent, CXClientData data);

static void check_call(sc_opck *k, CXCursor c) {
  CXCursor ref = CL.getCursorReferenced(c);
  char nm[128];
  spell(ref, nm, sizeof nm);
  if (CL.getCursorKind(ref) != CXCursor_FunctionDecl) {
    addf(k, c, "call through an expression: an operator may call only the file's own functions and fabs, fmin, fmax, "
         "copysign, sqrt, fma, floor, ceil, trunc, rint (and their f forms)");
    return;
  }
  int j = sc_opck_find(k, nm);
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
  sc_opck *k = data;
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
  sc_opck *k = data;
  int kind = CL.getCursorKind(c);
  if (kind == CXCursor_ParmDecl) check_decl_type(k, c, "parameter");
  else if (kind == CXCursor_CompoundStmt) CL.visitChildren(c, visit_body, k);
  return CXChildVisit_Continue;
}

static void check_function(sc_opck *k, int i) {
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
  sc_opck *k = data;
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
    int j = sc_opck_find(k, nm);
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

/* The rules, from the function `name`: its signature (`T name(T a, T b)`), then everything it
 * reaches. SCHEDC_EINVAL when the file defines no such function; else SCHEDC_OK with *target,
 * *dt, out's line and column, and each broken rule a line of k->msg. */
schedc_status sc_opck_rules(sc_opck *k, const char *name, int *target, schedc_dtype *dt, sc_opsrc *out) {
  CL.visitChildren(CL.getTranslationUnitCursor(k->tu), visit_top, k);
  *target = sc_opck_find(k, name);
  if (*target < 0 || !k->f[*target].defined) {
    char list[512] = "";
    for (int i = 0; i < k->nf; i++)
      if (k->f[i].defined && strlen(list) + strlen(k->f[i].name) + 3 < sizeof list)
        strcat(strcat(list, list[0] ? ", " : ""), k->f[i].name);
    return sc_err(SCHEDC_EINVAL, "%s: no function '%s' defined here (functions: %s)", k->path, name, list[0] ? list : "none");
  }
  CXCursor c = k->f[*target].cur;
  CXType rt = CL.getCursorResultType(c);
  int np = CL.Cursor_getNumArguments(c);
  char ty[128];
  if (dtype_of(rt, dt) != SCHEDC_OK || np != 2 || !type_ok(CL.getCursorType(CL.Cursor_getArgument(c, 0))) ||
      !type_ok(CL.getCursorType(CL.Cursor_getArgument(c, 1))) ||
      CL.getCanonicalType(CL.getCursorType(CL.Cursor_getArgument(c, 0))).kind != CL.getCanonicalType(rt).kind ||
      CL.getCanonicalType(CL.getCursorType(CL.Cursor_getArgument(c, 1))).kind != CL.getCanonicalType(rt).kind)
    addf(k, c, "'%s' must be `T %s(T a, T b)` with T one of " TYPES_ALLOWED " (it is %s)", name, name,
         type_spell(CL.getCursorType(c), ty, sizeof ty));
  unsigned line = 0, col = 0;
  CL.getExpansionLocation(CL.getCursorLocation(c), NULL, &line, &col, NULL);
  out->line = line;
  out->col = col;
  check_function(k, *target);
  return SCHEDC_OK;
}
