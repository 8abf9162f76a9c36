#!/bin/bash
# test_params_scan.sh SRC — the library (common, codegen, dsl, runtime) and the CLI read the
# environment only through common/params.h's list: no getenv, secure_getenv or environ outside
# common/params.c (the tests' emulator plugin, tests/emu/, is outside the scanned folders), and
# every name given to schedc_param_get is in the list. First a planted tree proves the scan bites.
set -u
src=$1
fail=0

# $1: a source tree. Prints each offending line as file:line: text.
scan() {
  local root=$1 names
  names=$(sed -nE 's/^ *X\(([A-Za-z0-9_]+),.*/\1/p' "$src/common/params.h")
  (cd "$root" && grep -rnE '\b(secure_getenv|getenv)[[:space:]]*\(|\benviron\b' \
      --include='*.c' --include='*.h' --include='*.cc' --include='*.cpp' --include='*.cu' \
      common codegen dsl ops runtime cli 2>/dev/null |
    grep -vE '^common/params\.c:' |
    grep -vE 'posix_spawnp?\(.*\benviron\b|extern char \*\*environ;') # handing a child our environment reads no variable
  (cd "$root" && grep -rnoE 'schedc_param_get\("[A-Za-z0-9_]*"' --include='*.c' --include='*.h' \
      common codegen dsl ops runtime cli 2>/dev/null) |
    while IFS= read -r hit; do
      name=${hit#*\(\"}
      name=${name%\"}
      grep -qxF "$name" <<<"$names" || echo "$hit: not in common/params.h's list"
    done
}

n=$(sed -nE 's/^ *X\(([A-Za-z0-9_]+),.*/\1/p' "$src/common/params.h" | wc -l)
if [ "$n" -lt 30 ]; then echo "FAIL: read only $n names from common/params.h's list"; fail=1; fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/runtime/cpu" "$tmp/cli" "$tmp/runtime/cuda" "$tmp/common"
printf 'static const char *f(void) { return getenv ("SCHEDC_NEW"); }\n' >"$tmp/runtime/cpu/x.c"
printf 'int g(void) { return secure_getenv("HOME") != 0; }\n' >"$tmp/common/fileio.c"
printf 'void h(const char **v) { schedc_param_get("SCHEDC_NOT_LISTED", v); schedc_param_get("SCHEDC_SLICE", v); }\n' >"$tmp/cli/y.c"
printf 'const char *e(void) { return getenv("SCHEDC_EMU_DEVICES"); }\n' >"$tmp/runtime/cuda/cuda_emu.c"
planted=$(scan "$tmp")
for want in 'runtime/cpu/x.c:1:' 'common/fileio.c:1:' 'runtime/cuda/cuda_emu.c:1:' 'SCHEDC_NOT_LISTED'; do
  grep -qF "$want" <<<"$planted" || { echo "FAIL: the scan misses a planted read ($want)"; fail=1; }
done
if grep -qE 'SCHEDC_SLICE' <<<"$planted"; then echo "FAIL: the scan flags what it allows"; fail=1; fi

found=$(scan "$src")
if [ -n "$found" ]; then
  echo "FAIL: environment read outside common/params.h's list (use sc_param_* or schedc_param_get):"
  echo "$found"
  fail=1
fi
reads=$(grep -cE '\bgetenv[[:space:]]*\(' "$src/common/params.c")
if [ "$reads" != 1 ]; then echo "FAIL: common/params.c has $reads getenv calls, expected the one in sc_param_raw"; fail=1; fi

[ $fail = 0 ] && echo "PASS: $n parameters; no environment read outside the list"
exit $fail
