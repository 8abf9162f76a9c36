/*
 * workbuf.h — the working buffer of a host-memory backend (workbuf.c): this rank's initial cells
 * in (widened to the accumulation type), and its result out (avg once, rounded to the data type
 * once; the flipout injection and, under digest verification, the digest taken by the copy,
 * recorded in the call's result).
 */
#ifndef SC_WORKBUF_H
#define SC_WORKBUF_H

#include "call.h"

void sc_work_in(const schedc_comm *c, const sc_call *k, char *W);
void sc_work_out(const schedc_comm *c, const sc_call *k, char *W, sc_result *res);

#endif
