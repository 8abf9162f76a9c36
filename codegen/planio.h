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

/* The header: magic, version, a reserved word, the payload length; the file ends with an 8-byte
 * hash after the payload. */
#define SC_PLAN_HEADER 24u
/* The largest plan file read: every transfer's 28 bytes at the limit of transfers, plus room for
 * names and the rank table (a bigger file is refused before any of it is read). */
#define SC_PLAN_MAX_BYTES ((unsigned long long)SC_IR_MAX_XFERS * 28u + (64ull << 20))

/* Checks the first n bytes of a plan file of file_size bytes (n >= SC_PLAN_HEADER unless the file
 * is shorter): magic, version, and that the payload length fits the size, so nothing past the
 * header is read from a file that cannot be a plan. SCHEDC_OK, or SCHEDC_EPLAN / SCHEDC_EVERSION
 * with a message in err. */
int sc_planio_check_header(const unsigned char *head, size_t n, unsigned long long file_size, char *err,
                           size_t errcap);
/* Serialise; *buf is malloc'd (caller frees). 0, or -1 on OOM. */
int sc_planio_write(const sc_ir *ir, unsigned char **buf, size_t *len);
/* Parse into *ir (initialised here; freed again on failure). Returns SCHEDC_OK, SCHEDC_EPLAN,
 * SCHEDC_EVERSION or SCHEDC_ENOMEM with a message in err. */
int sc_planio_read(const unsigned char *buf, size_t len, sc_ir *ir, char *err, size_t errcap);

#endif
