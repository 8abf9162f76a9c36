#!/usr/bin/env bash
# test.sh — the whole test suite: set up, build the release tree (build/) and the
# AddressSanitizer + UndefinedBehaviorSanitizer tree (build-asan/), run every ctest in both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
scripts/setup.sh build-asan -DSCHEDC_SANITIZE=ON
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
echo "== release tests"
ctest --test-dir build -j"$(nproc)" --output-on-failure
echo "== asan+ubsan tests"
ctest --test-dir build-asan -j"$(nproc)" --output-on-failure
