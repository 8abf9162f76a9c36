/*
 * planio.h — the versioned plan file: "SCHEDCPL", version, payload length, payload (the IR in
 * little-endian words), FNV-1a-64 of everything before it. Readers are strict: any unknown
 * version, size mismatch or hash mismatch is refused with a message.
 */
#ifndef SC_PLANIO_H
#define SC_PLANIO_H

#include <stddef.h>

#include "ir.h"

#define SC_PLAN_MAGIC "SCHEDCPL"
#define SC_PLAN_VERSION 1u

/* Serialise; *buf is malloc'd (caller frees). 0, or -1 on OOM. */
int sc_planio_write(const sc_ir *ir, unsigned char **buf, size_t *len);
/* Parse into *ir (initialised here; freed again on failure). Returns SCHEDC_OK, SCHEDC_EPLAN,
 * SCHEDC_EVERSION or SCHEDC_ENOMEM with a message in err. */
int sc_planio_read(const unsigned char *buf, size_t len, sc_ir *ir, char *err, size_t errcap);

#endif
