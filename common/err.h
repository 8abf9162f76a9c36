/*
 * err.h — the calling thread's error detail behind schedc_errmsg() (the status, collective,
 * dtype and op name tables are names.h's).
 */
#ifndef SC_ERR_H
#define SC_ERR_H

#include "schedc/schedc.h"

/* Set the thread's detail (printf-style) and return st, so callers write
 * `return sc_err(SCHEDC_EINVAL, "count %zu ...", n);`. */
schedc_status sc_err(schedc_status st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Set the detail to a ready string (copied, any length). */
schedc_status sc_err_str(schedc_status st, const char *msg);
/* Forget the thread's detail (successful calls that document they clear it). */
void sc_err_clear(void);

#endif
