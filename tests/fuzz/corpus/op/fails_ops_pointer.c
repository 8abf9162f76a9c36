// op: viaptr
// expect-exit: 1
// expect: pointer.c:8:10: local variable 'p' is a pointer (float *): operators take and return scalars
// expect: pointer.c:8:14: address-of (&): operators use values, never addresses
// expect: pointer.c:9:14: dereference (*): operators have no pointers
/* Pointers and addresses are rejected wherever they appear. */
float viaptr(float a, float b) {
  float *p = &a;
  return b + *p;
}
