/*
 * paths.c — the checks of the paths a command writes before it writes anything: an output file
 * must be a new name or a regular file and none of the inputs (by inode); an output folder is
 * created with its parents (cli.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

static const char *kind_of(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISREG(m) ? "a regular file" : "a special file";
}

int cli_check_output(const char *cmd, const char *opt, const char *out, const char *const *inputs, int ninputs) {
  if (!out || !*out) {
    fprintf(stderr, "schedc %s: %s '': an empty path names no file (give a file name)\n", cmd, opt);
    return -1;
  }
  struct stat so;
  if (stat(out, &so) != 0) return 0; /* absent (or unreachable: the write will say why) */
  if (!S_ISREG(so.st_mode)) {
    fprintf(stderr, "schedc %s: %s '%s' is %s; it must be a regular file or a new name (nothing was written)\n",
            cmd, opt, out, kind_of(so.st_mode));
    return -1;
  }
  for (int i = 0; i < ninputs; i++) {
    struct stat si;
    if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
      fprintf(stderr, "schedc %s: %s '%s' is the input '%s'%s; writing it would replace it (nothing was written)\n",
              cmd, opt, out, inputs[i], strcmp(out, inputs[i]) ? " (the same file under another name)" : "");
      return -1;
    }
  }
  return 0;
}

int cli_output_dir(const char *cmd, const char *opt, const char *dir) {
  if (!dir || !*dir) {
    fprintf(stderr, "schedc %s: %s '': an empty path names no folder (give a folder; it is created if missing)\n",
            cmd, opt);
    return -1;
  }
  char buf[4096];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
    fprintf(stderr, "schedc %s: %s: the path is longer than %zu bytes\n", cmd, opt, sizeof buf - 1);
    return -1;
  }
  /* mkdir -p: each missing parent, then the folder itself */
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
      fprintf(stderr, "schedc %s: %s '%s': cannot create %s: %s\n", cmd, opt, dir, buf, strerror(errno));
      return -1;
    }
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "schedc %s: %s '%s': cannot create it: %s\n", cmd, opt, dir, strerror(errno));
    return -1;
  }
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fprintf(stderr, "schedc %s: %s '%s' is %s, not a folder\n", cmd, opt, dir,
            stat(dir, &st) == 0 ? kind_of(st.st_mode) : "unreachable");
    return -1;
  }
  return 0;
}
