/*
 * cachedir.c — sc_cache_dir (fileio.h): the compiled-kernel and operator cache folder, from the
 * parameter list. Apart from fileio.c so that fileio.c stays libc-only (the tests' emulator
 * plugin builds its own copy of it; it asks the library for this folder through its host table).
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "params.h"

int sc_cache_dir(char *buf, size_t cap) {
  const char *d = sc_param_str(SC_P_SCHEDC_CACHE_DIR), *xdg = sc_param_str(SC_P_XDG_CACHE_HOME);
  const char *home = sc_param_str(SC_P_HOME);
  if (d && !strcmp(d, "off")) return 0;
  if (d) snprintf(buf, cap, "%s", d);
  else if (xdg) snprintf(buf, cap, "%s/schedc", xdg);
  else if (home) snprintf(buf, cap, "%s/.cache/schedc", home);
  else return 0;
  /* mkdir -p */
  for (char *p = buf + 1; *p; p++)
    if (*p == '/') { *p = 0; mkdir(buf, 0755); *p = '/'; }
  mkdir(buf, 0755);
  return 1;
}
