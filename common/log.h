/*
 * log.h — the library's messages that are not errors (warnings, notices) go through sc_log, never
 * straight to stderr: to the hook set with schedc_set_log (schedc.h), or else to the default
 * writer, which prints "schedc: warning: MSG" lines to stderr down to SCHEDC_DEBUG's level
 * (default warn). Errors are returned, not logged (err.h).
 */
#ifndef SC_LOG_H
#define SC_LOG_H

#include "schedc/schedc.h"

/* Format the message (no trailing newline, no "schedc:" prefix: the default writer adds those)
 * and hand it to the hook or the default writer. Any thread. */
void sc_log(schedc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
