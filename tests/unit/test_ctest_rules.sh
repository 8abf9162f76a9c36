#!/usr/bin/env bash
# test_ctest_rules.sh BUILD SRC — the suite's own rules (tests/README.md, "Skips and required
# tools"): no test of this build tree (its CTestTestfile.cmake files) nor any CMakeLists.txt under
# SRC/tests (the fuzz tree's, and tests a missing tool leaves out, included) has a
# PASS_/FAIL_/SKIP_REGULAR_EXPRESSION (PASS_ ignores the exit status; SKIP_ reads a skip from the
# output); every SKIP_RETURN_CODE is 77; no C or shell test prints [SKIP] and then exits 0 (a skip
# is exit status 77). First a planted tree proves each scan bites.
set -u
build=$1 src=$2
fail=0

# $1: a build tree. Prints each offending property.
scan_build() {
  find "$1" -name CTestTestfile.cmake -exec grep -HoE '(PASS|FAIL|SKIP)_REGULAR_EXPRESSION' {} + 
  find "$1" -name CTestTestfile.cmake -exec grep -HoE 'SKIP_RETURN_CODE "[0-9]*"' {} + | grep -v '"77"$'
}
# $1: a source tree. Prints each offending line as file:line: text.
scan_src() {
  (cd "$1" && find tests -name CMakeLists.txt -exec grep -HnE '^[^#]*(PASS|FAIL|SKIP)_REGULAR_EXPRESSION' {} +)
  # "[SKIP]" then, on that line or the next two, a success: return 0 / exit 0 / exit(0)
  (cd "$1" && find tests \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.sh' \) -not -path 'tests/python/*' -not -name test_ctest_rules.sh \
     -exec grep -HnA2 '\[SKIP\]' {} + | grep -E '(return 0;|exit 0([^0-9]|$)|exit\(0\))')
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/b/tests" "$tmp/s/tests/x"
cat >"$tmp/b/tests/CTestTestfile.cmake" <<'P'
set_tests_properties(a PROPERTIES  PASS_REGULAR_EXPRESSION "all ranks hold the same bits" _BACKTRACE_TRIPLES "x")
set_tests_properties(b PROPERTIES  SKIP_RETURN_CODE "0" _BACKTRACE_TRIPLES "x")
set_tests_properties(c PROPERTIES  SKIP_RETURN_CODE "77" _BACKTRACE_TRIPLES "x")
P
printf 'set_tests_properties(t PROPERTIES LABELS x\n  FAIL_REGULAR_EXPRESSION "DIFFERENT")\n# SKIP_REGULAR_EXPRESSION in a comment is fine\n' >"$tmp/s/tests/x/CMakeLists.txt"
printf 'int main(void) {\n  if (1) {\n    printf("[SKIP] no tool\\n");\n    return 0;\n  }\n}\n' >"$tmp/s/tests/x/t.c"
printf 'command -v tool || { echo "[SKIP] no tool"; exit 0; }\n' >"$tmp/s/tests/x/t.sh"
printf 'sc_skip_tool tool "[SKIP] elsewhere"; exit 1\n' >"$tmp/s/tests/x/ok.sh"
planted=$(scan_build "$tmp/b"; scan_src "$tmp/s")
for want in 'PASS_REGULAR_EXPRESSION' 'SKIP_RETURN_CODE "0"' 'x/CMakeLists.txt:2:' 'x/t.c-4-' 'x/t.sh:1:'; do
  grep -qF -- "$want" <<<"$planted" || { echo "FAIL: the scan misses a planted breach ($want)"; fail=1; }
done
for clean in 'SKIP_RETURN_CODE "77"' 'CMakeLists.txt:3:' 'ok.sh'; do
  ! grep -qF -- "$clean" <<<"$planted" || { echo "FAIL: the scan flags a clean line ($clean)"; fail=1; }
done

n=$(find "$build" -name CTestTestfile.cmake -exec grep -ho 'SKIP_RETURN_CODE "77"' {} + | wc -l)
if [ "$n" -lt 10 ]; then echo "FAIL: only $n tests of $build skip by exit status 77 (expected the cuda, nvrtc, ops, mpi and python tests)"; fail=1; fi
found=$(scan_build "$build"; scan_src "$src")
if [ -n "$found" ]; then
  echo "FAIL: a skip or a verdict read from the output, not the exit status (tests/README.md, \"Skips and required tools\"):"
  echo "$found"
  fail=1
fi
[ $fail = 0 ] && echo "ok: $n tests skip by exit status 77; no *_REGULAR_EXPRESSION; no [SKIP] with exit 0"
exit $fail
