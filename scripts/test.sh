#!/usr/bin/env bash
# test.sh — the whole test suite: set up, build the release tree (build/), the
# AddressSanitizer + UndefinedBehaviorSanitizer tree (build-asan/) and the ThreadSanitizer tree
# (build-tsan/); run every test in the first two and the threads tests (label tsan) in the third;
# then the libFuzzer targets (build-fuzz/, clang, ASan+UBSan) for a bounded time each.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI (CI=true, .ci/run) needs every tool the suite uses: a missing one fails the run up front
# (scripts/check_tools.sh, the one list) and in each test that needs it, instead of skipping
case ${CI:-} in ""|0|false) ;; *) export SCHEDC_REQUIRE_TOOLS=${SCHEDC_REQUIRE_TOOLS:-1} ;; esac
scripts/setup.sh build
case ${SCHEDC_REQUIRE_TOOLS:-0} in 0) ;; *) scripts/check_tools.sh build ;; esac
# The other three trees build at the lowest priority (nice 19) while the release tests run: the
# tests keep the cores they want, the builds take what they leave idle (the suite used 170% of two
# cores; built first, the three took ~150 s of the run's 26.6 min). Their own process group
# (set -m), so a failing release run stops them; their output is shown once they are done.
# The TSan tree runs the tests labelled tsan only (below): their executables, not the whole tree.
others_log=$(mktemp)
set -m
(
  nice -n 19 scripts/setup.sh build-asan -DSCHEDC_SANITIZE=ON
  BUILD_TARGETS="test_bitwise test_api test_mem test_small test_shrink" nice -n 19 scripts/setup.sh build-tsan -DSCHEDC_TSAN=ON
  nice -n 19 scripts/setup.sh build-fuzz -DCMAKE_C_COMPILER=clang -DSCHEDC_FUZZ=ON
) >"$others_log" 2>&1 &
others=$!
set +m
trap '[ -z "${others:-}" ] || kill -- -"$others" 2>/dev/null; rm -f "$others_log"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# ctest -j runs tests side by side on few cores, each the other's busy neighbour: the default
# waiting (spin while a preempted peer may run) then burns the cores the peers need (2.3x the wall
# time, 5x the CPU, measured). The suite sleeps early instead; the tests of the waiting itself set
# SCHEDC_SPIN=auto (tests/CMakeLists.txt).
export SCHEDC_SPIN=${SCHEDC_SPIN:-short}
echo "== release tests"
# one more test than cores: the release tree's tests wait a good part of their time (Python's
# launches and timeouts, net and MPI jobs, ranks asleep on each other: the whole run used 170% of
# two cores at -j2), and the builds above take only what the tests leave
ctest --test-dir build -j"$(($(nproc) + 1))" --output-on-failure -LE tsan
echo "== the other trees (built beside the release tests)"
if ! wait "$others"; then others=""; cat "$others_log"; echo "test.sh: building build-asan, build-tsan or build-fuzz failed" >&2; exit 1; fi
others=""
cat "$others_log"
echo "== asan+ubsan tests"
ctest --test-dir build-asan -j"$(nproc)" --output-on-failure -LE tsan
echo "== tsan tests (threads backend)"
# two at a time: under TSan the sweeps are CPU-bound now (2026-11-28: 111 s at -j4 against 105 s
# at -j2)
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan -j"$(nproc)" --output-on-failure -L tsan
echo "== fuzzing (plan files, schedule scripts, operator files; ${SCHEDC_FUZZ_SECONDS:-10} s each)"
cmake -S . -B build-fuzz -DFUZZ_SECONDS="${SCHEDC_FUZZ_SECONDS:-10}" >/dev/null
ctest --test-dir build-fuzz -j"$(nproc)" --output-on-failure -L fuzz
