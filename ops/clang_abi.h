/*
 * clang_abi.h — the few libclang (clang-c/Index.h) types, constants and entry points the operator
 * checker uses, declared here so the build needs no clang headers: libclang is loaded with dlopen
 * at run time (as runtime/cuda/dl_abi.h does for CUDA). The layouts and values are libclang's
 * stable C ABI (unchanged since LLVM 3.x); only ops/ sees this header.
 */
#ifndef SC_CLANG_ABI_H
#define SC_CLANG_ABI_H

typedef void *CXIndex;
typedef struct CXTranslationUnitImpl *CXTranslationUnit;
typedef void *CXClientData;
typedef void *CXFile;
typedef void *CXDiagnostic;
typedef struct { const void *data; unsigned private_flags; } CXString;
typedef struct { int kind; int xdata; const void *data[3]; } CXCursor;
typedef struct { int kind; void *data[2]; } CXType;
typedef struct { const void *ptr_data[2]; unsigned int_data; } CXSourceLocation;
typedef struct { const void *ptr_data[2]; unsigned begin_int_data, end_int_data; } CXSourceRange;
typedef struct { unsigned int_data[4]; void *ptr_data; } CXToken;
typedef int (*CXCursorVisitor)(CXCursor cursor, CXCursor parent, CXClientData data);

/* enum CXCursorKind (the values this checker names) */
enum {
  CXCursor_StructDecl = 2, CXCursor_UnionDecl = 3, CXCursor_EnumDecl = 5, CXCursor_FunctionDecl = 8,
  CXCursor_VarDecl = 9, CXCursor_ParmDecl = 10, CXCursor_TypedefDecl = 20, CXCursor_TypeRef = 43,
  CXCursor_FirstExpr = 100, CXCursor_UnexposedExpr = 100, CXCursor_DeclRefExpr = 101,
  CXCursor_MemberRefExpr = 102, CXCursor_CallExpr = 103, CXCursor_IntegerLiteral = 106,
  CXCursor_FloatingLiteral = 107, CXCursor_StringLiteral = 109, CXCursor_CharacterLiteral = 110,
  CXCursor_ParenExpr = 111, CXCursor_UnaryOperator = 112, CXCursor_ArraySubscriptExpr = 113,
  CXCursor_BinaryOperator = 114, CXCursor_CompoundAssignOperator = 115,
  CXCursor_ConditionalOperator = 116, CXCursor_CStyleCastExpr = 117, CXCursor_UnaryExpr = 136,
  CXCursor_LastExpr = 156,
  CXCursor_FirstStmt = 200, CXCursor_CompoundStmt = 202, CXCursor_IfStmt = 205,
  CXCursor_SwitchStmt = 206, CXCursor_WhileStmt = 207, CXCursor_DoStmt = 208, CXCursor_ForStmt = 209,
  CXCursor_LabelStmt = 201, CXCursor_GotoStmt = 210, CXCursor_IndirectGotoStmt = 211, CXCursor_ReturnStmt = 214,
  CXCursor_GCCAsmStmt = 215, CXCursor_MSAsmStmt = 229, CXCursor_NullStmt = 230, CXCursor_DeclStmt = 231,
  CXCursor_LastStmt = 299,
  CXCursor_TranslationUnit = 350,
  CXCursor_FirstAttr = 400, CXCursor_LastAttr = 441,
  CXCursor_MacroDefinition = 501, CXCursor_MacroExpansion = 502, CXCursor_InclusionDirective = 503,
};
/* enum CXTypeKind */
enum {
  CXType_Void = 2, CXType_Int = 17, CXType_Long = 18, CXType_LongLong = 19, CXType_Float = 21,
  CXType_Double = 22, CXType_Pointer = 101, CXType_FunctionProto = 111, CXType_ConstantArray = 112,
  CXType_IncompleteArray = 114, CXType_VariableArray = 115, CXType_DependentSizedArray = 116,
};
enum { CX_SC_Static = 3, CX_SC_Extern = 2 };       /* enum CX_StorageClass */
enum { CXChildVisit_Break = 0, CXChildVisit_Continue = 1, CXChildVisit_Recurse = 2 };
enum { CXTranslationUnit_DetailedPreprocessingRecord = 0x01 };
enum { CXDiagnostic_Error = 3 };                   /* enum CXDiagnosticSeverity */
enum { CXToken_Punctuation = 0, CXToken_Keyword = 1, CXToken_Identifier = 2, CXToken_Literal = 3,
       CXToken_Comment = 4 };

/* The entry points, resolved all or none (ops/opcheck.c). */
typedef struct sc_clang {
  CXIndex (*createIndex)(int exclude_pch, int display_diagnostics);
  void (*disposeIndex)(CXIndex);
  int (*parseTranslationUnit2)(CXIndex, const char *file, const char *const *args, int nargs, void *unsaved,
                               unsigned nunsaved, unsigned options, CXTranslationUnit *out);
  void (*disposeTranslationUnit)(CXTranslationUnit);
  CXCursor (*getTranslationUnitCursor)(CXTranslationUnit);
  unsigned (*visitChildren)(CXCursor, CXCursorVisitor, CXClientData);
  int (*getCursorKind)(CXCursor);
  CXSourceLocation (*getCursorLocation)(CXCursor);
  CXSourceRange (*getCursorExtent)(CXCursor);
  void (*getExpansionLocation)(CXSourceLocation, CXFile *, unsigned *line, unsigned *col, unsigned *off);
  int (*Location_isFromMainFile)(CXSourceLocation);
  CXString (*getCursorSpelling)(CXCursor);
  const char *(*getCString)(CXString);
  void (*disposeString)(CXString);
  CXType (*getCursorType)(CXCursor);
  CXType (*getCanonicalType)(CXType);
  CXType (*getCursorResultType)(CXCursor);
  CXString (*getTypeSpelling)(CXType);
  unsigned (*isVolatileQualifiedType)(CXType);
  CXCursor (*getCursorReferenced)(CXCursor);
  CXCursor (*getCursorSemanticParent)(CXCursor);
  int (*Cursor_getStorageClass)(CXCursor);
  unsigned (*isCursorDefinition)(CXCursor);
  int (*Cursor_getNumArguments)(CXCursor);
  CXCursor (*Cursor_getArgument)(CXCursor, unsigned);
  unsigned (*equalCursors)(CXCursor, CXCursor);
  unsigned (*getNumDiagnostics)(CXTranslationUnit);
  CXDiagnostic (*getDiagnostic)(CXTranslationUnit, unsigned);
  int (*getDiagnosticSeverity)(CXDiagnostic);
  CXString (*getDiagnosticSpelling)(CXDiagnostic);
  CXSourceLocation (*getDiagnosticLocation)(CXDiagnostic);
  void (*disposeDiagnostic)(CXDiagnostic);
  void (*tokenize)(CXTranslationUnit, CXSourceRange, CXToken **, unsigned *);
  void (*disposeTokens)(CXTranslationUnit, CXToken *, unsigned);
  CXString (*getTokenSpelling)(CXTranslationUnit, CXToken);
  int (*getTokenKind)(CXToken);
  CXString (*getClangVersion)(void);
} sc_clang;

#endif
