// op: scaled
// expect-exit: 1
// expect: global.c:6:7: global variable 'scale': operators keep no state
// expect: global.c:9:20: 'scale' is a global variable
/* Globals are rejected, read or written. */
float scale = 2.0f;

float scaled(float a, float b) {
  return (a + b) * scale;
}
