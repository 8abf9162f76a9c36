#!/usr/bin/env bash
# setup.sh — installs what schedc needs to build and test on Debian 12 (idempotent: apt-get runs
# only when a package is missing) and configures + builds the release tree in build/.
# Usage: scripts/setup.sh [BUILD_DIR [extra cmake args...]]; BUILD_TARGETS (optional): build only
# those targets (test.sh: the TSan tree, whose tests use five executables)
set -euo pipefail
cd "$(dirname "$0")/.."
# libclang-16-dev: custom operators are checked with libclang (loaded with dlopen; docs/ops.md);
# python3-torch, -pytest, -numpy, -venv: the Python package's tests (docs/python.md);
# clang, libclang-rt-14-dev: the libFuzzer targets (tests/fuzz); iproute2: the test cluster (tests/cluster);
# libucx-dev: the net backend (runtime/net)
pkgs="build-essential cmake pkg-config liblua5.4-dev openmpi-bin libopenmpi-dev libgloo-dev libclang-16-dev python3-torch python3-pytest python3-numpy python3-venv clang libclang-rt-14-dev libhwloc-dev iproute2 libucx-dev"
missing=""
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi
# PyPI's torch 2.x in a venv cached outside the clone (~/.cache/schedc; ~2 min and 5.4 GB the
# first time): the torch.distributed backend's tests (python.torch2) run on it
tests/python/venv.sh >/dev/null || echo "setup: no torch 2.x venv (python.torch2 fails under CI=true, skips elsewhere)"
dir=${1:-build}; shift || true
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
# shellcheck disable=SC2086 # a list of target names
cmake --build "$dir" -j"$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >/dev/null
echo "setup: built $dir"
