/*
 * opreg.h — the process's registry of custom reduction operators (schedc_op_create). A custom op
 * is a schedc_op value >= SCHEDC_OP_CUSTOM_BASE naming a slot here, so every layer that takes a
 * schedc_op (the CPU kernels, the CUDA emitter, the call descriptor) reaches the op from common/.
 */
#ifndef SC_OPREG_H
#define SC_OPREG_H

#include <stddef.h>
#include <stdint.h>

#include "schedc/schedc.h"

/* d[i] = (...(a[i] op s[0][i]) op s[1][i] ...) op s[n-1][i] for i < len: sc_reduce_chain's
 * shape, the element loop compiled around the op in one shared object (one call per chain). */
typedef void (*sc_opchain_fn)(void *d, const void *a, const void *const *s, int n, size_t len);

typedef struct sc_opdef {
  schedc_dtype type;         /* the C type of the function: F32, F64, I32 or I64 */
  uint64_t hash;             /* of the checked source: ranks must agree on it, kernels are keyed by it */
  char name[96];             /* "file.c:name" for messages */
  sc_opchain_fn chain;       /* the CPU element loop */
  const char *cuda;          /* __device__ functions for NVRTC, ending in one named sc_custom_op */
} sc_opdef;

/* Register a definition (kept by pointer until sc_opreg_remove): its op value, or -1 when the
 * registry is full. Values are never reused, so a freed op is an error, not another op. */
int sc_opreg_add(const sc_opdef *d);
/* The definition of a custom op value, or NULL (not custom, unknown, or freed). Lock-free. */
const sc_opdef *sc_opreg_get(int op);
/* Forget a value (the caller frees the definition afterwards). */
void sc_opreg_remove(int op);
/* The accumulation type an op serves dtype in, checked: SCHEDC_OK, or SCHEDC_EINVAL naming the
 * op's type and the dtypes it serves. Built-in ops serve every dtype. (opdtype.c) */
schedc_status sc_op_check_dtype(int op, schedc_dtype dtype, const char *what);

#endif
