#!/usr/bin/env bash
# run.sh — ctest's driver of the Python tests (label python): finds a Python with torch, numpy
# and pytest (Debian's /usr/bin/python3 first: python3-torch is installed for it) and runs
# pytest on tests/python against the library of this build tree; skips (exit 77) without one.
# Usage: run.sh LIBSCHEDC_SO [--gpu|--torch2] [pytest args...]; SCHEDC_TEST_PYTHON overrides the interpreters tried.
# --gpu: test_gpu.py only (CUDA tensors), skipped unless torch sees a CUDA device; otherwise
# every other test file. --recover: test_recover.py's FSDP2 and torchrun tests on torch 2.x (the
# venv below). --torch2: the backend's tests on PyPI's torch 2.x, in the venv
# tests/python/venv.sh makes (scripts/setup.sh runs it): without it, a failure where tools are
# required (SCHEDC_REQUIRE_TOOLS, CI), else a skip (exit 77).
set -u
lib=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/../skip.sh" # skips exit 77; a missing tool fails under SCHEDC_REQUIRE_TOOLS (CI)
if [ "${1:-}" = --torch2 ] || [ "${1:-}" = --recover ]; then
  mode=$1; shift
  venv=${SCHEDC_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/schedc/venv-torch2}
  if ! "$venv/bin/python" -c 'import torch, expecttest, numpy, pytest, sys; sys.exit(int(torch.__version__.split(".")[0]) < 2)' 2>/dev/null; then
    [ "${CI:-}" = true ] && export SCHEDC_REQUIRE_TOOLS=${SCHEDC_REQUIRE_TOOLS:-1}
    sc_skip_tool "torch 2.x venv" "none at $venv (scripts/setup.sh makes it with tests/python/venv.sh)"
  fi
  export SCHEDC_LIBRARY=$lib PYTHONPATH="$root/python:$here${PYTHONPATH:+:$PYTHONPATH}" OMP_NUM_THREADS=1
  if [ "$mode" = --recover ]; then # what needs torch 2.x: FSDP2's sharded checkpoints, torchrun (the rest runs on 1.13)
    exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/test_recover.py" -k "fsdp or torchrun" "$@"
  fi
  exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$here/test_backend.py" "$here/test_fixes.py" "$here/test_net.py" \
    "$here/test_order.py" "$here/test_torch_suite.py" "$here/test_compress.py::test_schedc_backend_wire_hooks_and_sparse" "$@"
fi
py=""
for c in ${SCHEDC_TEST_PYTHON:-/usr/bin/python3 python3}; do
  if command -v "$c" >/dev/null && "$c" -c 'import torch, numpy, pytest' 2>/dev/null; then py=$c; break; fi
done
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
