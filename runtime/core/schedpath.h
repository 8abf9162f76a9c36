/*
 * schedpath.h — where a schedule or topology named without a folder ("ring", "dgx_h100") is
 * read from: the name itself, then $SCHEDC_SCHEDULE_PATH, then the installed share/schedc found
 * from the library's own location. Used by the plan and cost-model loaders (schedc_schedule_find).
 */
#ifndef SC_SCHEDPATH_H
#define SC_SCHEDPATH_H

#include <stddef.h>

#include "schedc/schedc.h"

/* Resolve `name` into out[cap]: a schedule when `sub` is NULL, else a file of the folder `sub`
 * (e.g. "topologies") of each place. A name with a '/' or one that is an existing file is used
 * as it is. When nothing is found: `notfound` returned, errmsg listing every place looked in. */
schedc_status sc_find_file(const char *name, const char *sub, schedc_status notfound, char *out, size_t cap);

#endif
