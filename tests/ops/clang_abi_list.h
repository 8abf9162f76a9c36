/*
 * clang_abi_list.h — the constants and types ops/clang_abi.h declares, listed once so that
 * test_clang_abi compiles the list against clang_abi.h and against the real clang-c/Index.h
 * (version-dependent bounds such as CXCursor_LastExpr are not listed: the checker uses them
 * only as ranges).
 */
#define SC_CLANG_CONSTANTS(X)                                                                        \
  X(CXCursor_StructDecl) X(CXCursor_UnionDecl) X(CXCursor_EnumDecl) X(CXCursor_FunctionDecl)         \
  X(CXCursor_VarDecl) X(CXCursor_ParmDecl) X(CXCursor_TypedefDecl) X(CXCursor_TypeRef)               \
  X(CXCursor_FirstExpr) X(CXCursor_UnexposedExpr) X(CXCursor_DeclRefExpr) X(CXCursor_MemberRefExpr)  \
  X(CXCursor_CallExpr) X(CXCursor_IntegerLiteral) X(CXCursor_FloatingLiteral)                        \
  X(CXCursor_StringLiteral) X(CXCursor_CharacterLiteral) X(CXCursor_ParenExpr)                      \
  X(CXCursor_UnaryOperator) X(CXCursor_ArraySubscriptExpr) X(CXCursor_BinaryOperator)                \
  X(CXCursor_CompoundAssignOperator) X(CXCursor_ConditionalOperator) X(CXCursor_CStyleCastExpr)      \
  X(CXCursor_UnaryExpr) X(CXCursor_FirstStmt) X(CXCursor_CompoundStmt) X(CXCursor_IfStmt)            \
  X(CXCursor_SwitchStmt) X(CXCursor_WhileStmt) X(CXCursor_DoStmt) X(CXCursor_ForStmt)                \
  X(CXCursor_GotoStmt) X(CXCursor_IndirectGotoStmt) X(CXCursor_LabelStmt) X(CXCursor_ReturnStmt)     \
  X(CXCursor_GCCAsmStmt) X(CXCursor_MSAsmStmt) X(CXCursor_NullStmt) X(CXCursor_DeclStmt)             \
  X(CXCursor_TranslationUnit) X(CXCursor_FirstAttr) X(CXCursor_MacroDefinition)                      \
  X(CXCursor_MacroExpansion) X(CXCursor_InclusionDirective) X(CXType_Void) X(CXType_Int)             \
  X(CXType_Long) X(CXType_LongLong) X(CXType_Float) X(CXType_Double) X(CXType_Pointer)               \
  X(CXType_ConstantArray) X(CXType_FunctionProto) X(CXType_IncompleteArray)                          \
  X(CXType_VariableArray) X(CX_SC_Static) X(CX_SC_Extern)                                            \
  X(CXChildVisit_Break) X(CXChildVisit_Continue) X(CXChildVisit_Recurse)                             \
  X(CXTranslationUnit_DetailedPreprocessingRecord) X(CXDiagnostic_Error) X(CXToken_Punctuation)      \
  X(CXToken_Keyword) X(CXToken_Identifier) X(CXToken_Literal) X(CXToken_Comment)
#define SC_CLANG_TYPES(X) X(CXCursor) X(CXType) X(CXString) X(CXSourceLocation) X(CXSourceRange) X(CXToken)
