#!/usr/bin/env bash
# run.sh — ctest's driver of the Python tests (label python): finds a Python with torch, numpy
# and pytest (Debian's /usr/bin/python3 first: python3-torch is installed for it) and runs
# pytest on tests/python against the library of this build tree; skips (exit 77) without one.
# Usage: run.sh LIBSCHEDC_SO [--gpu] [pytest args...]; SCHEDC_TEST_PYTHON overrides the interpreters tried.
# --gpu: test_gpu.py only (CUDA tensors), skipped unless torch sees a CUDA device; otherwise
# every other test file.
set -u
lib=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=""
for c in ${SCHEDC_TEST_PYTHON:-/usr/bin/python3 python3}; do
  if command -v "$c" >/dev/null && "$c" -c 'import torch, numpy, pytest' 2>/dev/null; then py=$c; break; fi
done
. "$here/../skip.sh" # skips exit 77; no torch fails under SCHEDC_REQUIRE_TOOLS (CI)
[ -n "$py" ] || sc_skip_tool torch "no python3 with torch, numpy and pytest (Debian: apt-get install python3-torch python3-numpy python3-pytest; scripts/setup.sh installs them)"
export SCHEDC_LIBRARY=$lib PYTHONPATH="$root/python:$here${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1
if [ "${1:-}" = --gpu ]; then # test_gpu.py alone, where torch sees a CUDA device
  shift
  if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    sc_skip "torch sees no CUDA device ($py)"
  fi
  exec "$py" -m pytest -q -p no:cacheprovider "$here/test_gpu.py" "$@"
fi
exec "$py" -m pytest -q -p no:cacheprovider "$here" --ignore="$here/test_gpu.py" "$@"
