#!/usr/bin/env bash
# venv.sh — makes (once) the venv the Python tests run PyPI's torch 2.x in: Debian's python3 with
# --system-site-packages (numpy, pytest from Debian), torch + expecttest from PyPI. Cached outside
# the clone (~/.cache/schedc, or $SCHEDC_TORCH2_VENV) so a fresh clone reuses it; idempotent, and
# safe when two set-ups run at once (flock). Prints the venv's path. First run: ~1-2 min, 5.4 GB.
set -euo pipefail
want="torch==2.15.0 expecttest"
dir=${SCHEDC_TORCH2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/schedc/venv-torch2}
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if [ "$(cat "$dir/.schedc-complete" 2>/dev/null)" = "$want" ] && "$dir/bin/python" -c 'import torch, expecttest' 2>/dev/null; then
  echo "$dir"; exit 0
fi
rm -rf "$dir"
/usr/bin/python3 -m venv --system-site-packages "$dir" >&2
# shellcheck disable=SC2086
"$dir/bin/pip" install -q $want >&2
"$dir/bin/python" -c 'import torch, expecttest, numpy, pytest' >&2
echo "$want" > "$dir/.schedc-complete"
echo "$dir"
