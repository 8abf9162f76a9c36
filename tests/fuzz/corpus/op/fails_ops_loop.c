// op: powsum
// expect-exit: 1
// expect: loop.c:8:3: loop: operators have no loops
/* Loops are rejected (the element loop is schedc's; an operator is straight-line code). */
float powsum(float a, float b) {
  float r = a + b;
  int i;
  for (i = 0; i < 3; i++) r = r * r;
  return r;
}
