#!/usr/bin/env bash
# test_install.sh — schedc installed as a C library (ctest label install; tests/CMakeLists.txt
# runs one STEP per test, setup and cleanup as a ctest fixture around the others):
#   setup      cmake --install the build into WORK/prefix; every promised file is there
#   symbols    libschedc.so exports exactly the SCHEDC_API functions of schedc.h; its soname
#   pkgconfig  consumer.c built with pkg-config (shared; static with --static), run
#   cmake      consumer.c built by tests/install/CMakeLists.txt (find_package(schedc)), run
#   cli        WORK/prefix/bin/schedc finds shipped schedules by name from /, also once moved
#   cleanup    removes WORK
# Usage: test_install.sh STEP WORK BUILD_DIR LIBDIR CC CMAKE PKG_CONFIG NM [EXTRA_CFLAGS]
set -euo pipefail
step=$1 W=$2 B=$3 L=$4 CC=$5 CMAKE=$6 PKGCONFIG=$7 NM=${8:-nm} XFLAGS=${9:-}
HERE=$(cd "$(dirname "$0")" && pwd)
P=$W/prefix
# Only what the installed files do by themselves: no library path, no schedule path.
unset LD_LIBRARY_PATH SCHEDC_SCHEDULE_PATH
die() { echo "FAIL: $*" >&2; exit 1; }
real() { (cd "$1" && pwd -P); }
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

case $step in
setup)
  rm -rf "$W"
  mkdir -p "$W"
  "$CMAKE" --install "$B" --prefix "$P" >"$W/install.log" 2>&1 || { cat "$W/install.log"; die "cmake --install"; }
  for f in include/schedc/schedc.h "$L/libschedc.a" "$L/libschedc.so" bin/schedc share/schedc/ring.lua \
           share/schedc/topologies/dgx_h100.lua "$L/pkgconfig/schedc.pc" "$L/cmake/schedc/schedcConfig.cmake" \
           "$L/cmake/schedc/schedcConfigVersion.cmake"; do
    [ -e "$P/$f" ] || die "the install has no $f"
  done
  echo "installed into $P"
  ;;
symbols)
  so=$P/$L/libschedc.so
  exported=$("$NM" -D --defined-only "$so" | awk 'NF == 3 {print $3}' | sort)
  # Linker-defined markers some binutils versions export from every library; ours has none today.
  others=$(grep -v '^schedc_' <<<"$exported" | grep -vxE '_init|_fini|_edata|_end|__bss_start' || true)
  [ -z "$others" ] || die "libschedc.so exports more than schedc_*: $(echo $others)"
  # Every function declared in schedc.h (a line starting with a type and naming schedc_X( ),
  # with or without SCHEDC_API: one that lacks it shows up below as declared but not exported.
  declared=$(grep -oE '^[A-Za-z_][^(;]*[ *]schedc_[a-z0-9_]+\(' "$P/include/schedc/schedc.h" |
             grep -oE 'schedc_[a-z0-9_]+\($' | tr -d '(' | sort)
  [ "$(wc -l <<<"$declared")" -gt 40 ] || die "too few function declarations found in schedc.h"
  grep -E '^[A-Za-z_][^(;]*[ *]schedc_[a-z0-9_]+\(' "$P/include/schedc/schedc.h" | grep -v '^SCHEDC_API ' &&
    die "the declarations above lack SCHEDC_API"
  diff <(echo "$declared") <(grep '^schedc_' <<<"$exported") >"$W/symbols.diff" ||
    { cat "$W/symbols.diff"; die "exported schedc_* differ from schedc.h's SCHEDC_API functions (<: declared only, >: exported only)"; }
  soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = libschedc.so.0 ] || die "soname is '$soname', expected libschedc.so.0"
  needed "$so" | grep -q '^liblua' || die "libschedc.so does not carry Lua"
  echo "libschedc.so ($soname) exports the $(wc -l <<<"$declared") functions of schedc.h and nothing else"
  ;;
pkgconfig)
  export PKG_CONFIG_PATH=$P/$L/pkgconfig
  cflags=$("$PKGCONFIG" --cflags schedc) libs=$("$PKGCONFIG" --libs schedc)
  case $libs in *lua*|*mpi*) die "pkg-config --libs schedc names Lua or MPI: $libs" ;; esac
  warn="-std=c99 -D_POSIX_C_SOURCE=200809L -Wall -Wextra -Werror -pedantic"
  # shellcheck disable=SC2086  # flags are word lists
  "$CC" $warn $XFLAGS $cflags -o "$W/consumer_pc" "$HERE/consumer.c" $libs -Wl,-rpath,"$P/$L" -pthread
  needed "$W/consumer_pc" | grep -qx libschedc.so.0 || die "consumer_pc does not use libschedc.so.0"
  (cd "$W" && ./consumer_pc ring "$(real "$P")/")
  # Static: Libs.private supplies what libschedc.a needs. Found relative to the program, which is
  # not in the prefix here, so the schedule comes through SCHEDC_SCHEDULE_PATH.
  slibs=$("$PKGCONFIG" --static --libs schedc | sed 's/-lschedc\b/-l:libschedc.a/')
  "$CC" $warn $XFLAGS $cflags -o "$W/consumer_static" "$HERE/consumer.c" $slibs -pthread
  if needed "$W/consumer_static" | grep -q libschedc; then die "consumer_static uses libschedc.so"; fi
  (cd "$W" && SCHEDC_SCHEDULE_PATH="$P/share/schedc" ./consumer_static ring "$P/share/schedc/")
  if command -v c++ >/dev/null; then # the header as C++ (extern "C")
    echo '#include <schedc/schedc.h>' | c++ $cflags -Wall -Wextra -Werror -fsyntax-only -x c++ -
  fi
  ;;
cmake)
  "$CMAKE" -S "$HERE" -B "$W/cmake-build" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" \
    -DCMAKE_C_FLAGS="$XFLAGS" -DCMAKE_EXE_LINKER_FLAGS="$XFLAGS" -DCMAKE_BUILD_TYPE=Release >"$W/cmake.log" 2>&1 ||
    { cat "$W/cmake.log"; die "configuring tests/install with find_package(schedc)"; }
  grep -qx "schedc_DIR:PATH=$P/$L/cmake/schedc" "$W/cmake-build/CMakeCache.txt" ||
    die "find_package(schedc) found $(grep '^schedc_DIR' "$W/cmake-build/CMakeCache.txt"), not $P"
  "$CMAKE" --build "$W/cmake-build" >"$W/cmake-build.log" 2>&1 || { cat "$W/cmake-build.log"; die "building the consumer"; }
  (cd "$W" && "$W/cmake-build/consumer" ring "$(real "$P")/")
  ;;
cli)
  S=$P/bin/schedc
  cd /
  out=$("$S" check ring --ranks 8) || die "schedc check ring --ranks 8 (from /) failed"
  grep -q "^ring: ok: allreduce 'ring', 8 ranks" <<<"$out" || die "unexpected: $out"
  echo "$out"
  "$S" check hierarchical --topology dgx_h100 >/dev/null || die "a topology by name"
  if out=$("$S" check no_such_schedule --ranks 4 2>&1); then die "a missing schedule was accepted"; fi
  grep -q "cannot find schedule 'no_such_schedule'" <<<"$out" && grep -qF "$(real "$P")/share/schedc" <<<"$out" ||
    die "the not-found message does not list the installed folder: $out"
  mkdir -p "$W/mine" && cp "$P/share/schedc/direct.lua" "$W/mine/ring.lua"
  out=$(SCHEDC_SCHEDULE_PATH="$W/absent:$W/mine" "$S" check ring --ranks 4) || die "SCHEDC_SCHEDULE_PATH"
  grep -q "'direct'" <<<"$out" || die "SCHEDC_SCHEDULE_PATH does not come before the install: $out"
  # A moved prefix still works: RPATH $ORIGIN/../lib, share/schedc found from the library.
  cp -a "$P" "$W/moved"
  "$W/moved/bin/schedc" check ring --ranks 8 >/dev/null || die "the moved prefix's schedc"
  out=$("$W/moved/bin/schedc" check no_such_schedule 2>&1) || true
  grep -qF "$(real "$W/moved")/share/schedc" <<<"$out" || die "the moved prefix looks elsewhere: $out"
  echo "schedules by name: from /, through SCHEDC_SCHEDULE_PATH, and from a moved prefix"
  ;;
cleanup)
  rm -rf "$W"
  ;;
*) die "unknown step $step" ;;
esac
