// op: counted
// expect-exit: 1
// expect: static_counter.c:10:14: static variable 'calls': operators keep no state between calls
// expect: static_counter.c:11:3: 'calls' is a static variable: an operator may read and write only its parameters and local variables
#include <math.h>

/* A static counter makes the result depend on how many times the op ran: rejected twice (the
 * declaration and the use). */
float counted(float a, float b) {
  static int calls;
  calls++;
  return a + b;
}
