#!/usr/bin/env bash
# test_info.sh SCHEDC SRC EMU_PLUGIN MPI_BUILT(0|1) SANITIZED(0|1) — `schedc --version` and
# `schedc info` (text and --json) against what the test finds itself: the version in schedc.h,
# a git revision that names a commit of the checkout, the backend and library rows (mpi and hwloc
# as ldd sees the library link them, a driver path that cannot load named), the CPUs as getconf
# and nproc count them (taskset narrows the usable ones), the vector path from /proc/cpuinfo's
# flags, the emulated GPUs of the test plugin, the kernel cache and /dev/shm as df sees them, and
# the variables set (a malformed one refused as its readers refuse it, a misspelt one flagged,
# JSON escaping of quotes, control characters and a byte that is not UTF-8).
set -u
S=$1 SRC=$2 EMU=$3 MPI_BUILT=$4 SANITIZED=$5
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; [ -n "${2:-}" ] && echo "$2" | head -40; fail=$((fail + 1)); }
PY=/usr/bin/python3
# field PATH... of the JSON on stdin, as Python prints it
jq_() { "$PY" -c 'import json, sys
d = json.load(sys.stdin)
for k in sys.argv[1:]:
    d = d[int(k)] if isinstance(d, list) else d[k]
print(d if not isinstance(d, bool) else str(d).lower())' "$@"; }
# env without any SCHEDC_* variable of the caller (ctest may pass SCHEDC_SPIN and others)
clean_env() { env $(env | sed -n 's/^\(SCHEDC_[A-Za-z0-9_]*\)=.*/-u \1/p') "$@"; }

# ---- --version ----------------------------------------------------------------------------------
hdr=$(sed -nE 's/^#define SCHEDC_VERSION_(MAJOR|MINOR|PATCH) ([0-9]+).*/\2/p' "$SRC/include/schedc/schedc.h" | paste -sd.)
[ -n "$hdr" ] && [ "$(grep -c . <<<"${hdr//./$'\n'}")" = 3 ] && ok || bad "cannot read the version from schedc.h ($hdr)"
v=$("$S" --version); rc=$?
V=$("$S" -V)
re='^schedc ([0-9.]+) [(]git ([^ )]+)[)]$'
if [ $rc = 0 ] && [[ "$v" =~ $re ]] && [ "${BASH_REMATCH[1]}" = "$hdr" ] && [ "$v" = "$V" ]; then
  ok
  rev=${BASH_REMATCH[2]}
  if [ "$rev" = unknown ]; then
    [ -e "$SRC/.git" ] && command -v git >/dev/null && bad "revision 'unknown' in a git checkout" || ok
  else
    h=${rev%-dirty}; h=${h##*-g} # describe's TAG-N-gHASH form, or HASH
    if [[ "$h" =~ ^[0-9a-f]{7,40}$ ]] && { ! command -v git >/dev/null || git -C "$SRC" cat-file -e "$h^{commit}" 2>/dev/null; }; then ok
    else bad "revision '$rev' names no commit of $SRC"; fi
  fi
else
  bad "--version: exit $rc, '$v' (want 'schedc $hdr (git REV)', the same for -V: '$V')"
fi
out=$("$S" --version extra 2>&1); [ $? = 2 ] && grep -q "unexpected argument 'extra'" <<<"$out" && ok || bad "--version extra: not a usage error" "$out"

# ---- the text and the JSON say the same ------------------------------------------------------------
clean_env "$S" info >"$tmp/info.txt" 2>"$tmp/info.err"; rc=$?
[ $rc = 0 ] && [ ! -s "$tmp/info.err" ] && ok || bad "schedc info: exit $rc" "$(cat "$tmp/info.err")"
[ "$(head -1 "$tmp/info.txt")" = "$v" ] && ok || bad "info's first line is not --version's" "$(head -3 "$tmp/info.txt")"
clean_env "$S" info --json >"$tmp/info.json"; rc=$?
if [ $rc = 0 ] && "$PY" -m json.tool "$tmp/info.json" >/dev/null; then ok; else bad "info --json is not JSON (exit $rc)" "$(cat "$tmp/info.json")"; fi
[ "$(jq_ version <"$tmp/info.json")" = "$hdr" ] && [ "$(jq_ revision <"$tmp/info.json")" = "$rev" ] && ok || bad "JSON version/revision differ from --version"
names=$(jq_ backends <"$tmp/info.json" | "$PY" -c 'import ast, sys; print(" ".join(b["name"] for b in ast.literal_eval(sys.stdin.read())))')
# the rows are the registries' own: runtime/backends.h's SC_BACKEND_LIST (a new backend adds a row
# there and nowhere else), runtime/info.c's SC_LIBRARY_LIST; threads, shm, mpi and cuda always
# among the backends; the first seven libraries fixed
listed() { sed -n "/#define $1/,/^\$/p" "$2" | sed -nE 's/^ *X\("([^"]+)".*/\1/p' | paste -sd"$3"; }
want_b=$(listed SC_BACKEND_LIST "$SRC/runtime/backends.h" ' ')
want_l=$(listed SC_LIBRARY_LIST "$SRC/runtime/info.c" ',')
has_all() { local w; for w in $2; do [[ "$3$1$3" == *"$3$w$3"* ]] || return 1; done; }
has_all "$want_b" "threads shm mpi cuda" ' ' && [[ "$want_l" == "NVRTC,CUDA driver,NCCL,NVML,libclang,hwloc,MPI"* ]] && ok ||
  bad "cannot read the backend and library lists ('$want_b'; '$want_l')"
[ "$names" = "$want_b" ] && ok || bad "backends listed: '$names' (want '$want_b')"
libs=$("$PY" -c 'import json, sys; print(",".join(l["name"] for l in json.load(open(sys.argv[1]))["libraries"]))' "$tmp/info.json")
[ "$libs" = "$want_l" ] && ok || bad "libraries listed: '$libs' (want '$want_l')"
for b in threads shm; do
  grep -qE "^  $b +yes$" "$tmp/info.txt" && ok || bad "backend $b not usable here?" "$(cat "$tmp/info.txt")"
done
if [ "$MPI_BUILT" = 1 ]; then want_mpi='^  mpi +yes'; else want_mpi='^  mpi +not built: .*install libopenmpi-dev'; fi
grep -qE "$want_mpi" "$tmp/info.txt" && ok || bad "mpi backend row (built: $MPI_BUILT)" "$(grep '^  mpi' "$tmp/info.txt")"

# ---- libraries: linked ones as ldd sees them; loaded ones exist; a driver that cannot load ------
lib=$(sed -n 's/^library: //p' "$tmp/info.txt")
[ -e "$lib" ] && ok || bad "library: '$lib' is no file"
for l in MPI hwloc; do
  row=$(grep -E "^  $l +" "$tmp/info.txt")
  so=$(ldd "$lib" 2>/dev/null | awk -v k="lib$(tr A-Z a-z <<<"$l")." 'index($1, k) == 1 { print $3 }')
  if [ -n "$so" ]; then
    grep -qF "found: $so " <<<"$row" && ok || bad "$l: ldd links $so, info says: $row"
  else
    grep -qE "not built: .*install lib" <<<"$row" && ok || bad "$l: not linked, info says: $row"
  fi
done
grep -qE '^  MPI +found: .* \(Open MPI|^  MPI +found: .* \(MPICH|^  MPI +not built' "$tmp/info.txt" && ok || bad "MPI's version missing" "$(grep '^  MPI' "$tmp/info.txt")"
while read -r path; do
  [ -e "$path" ] && ok || bad "a library found at '$path', which does not exist"
done < <(grep -v ' not found: ' "$tmp/info.txt" | sed -nE 's/^  [A-Za-z ]+ +found: ([^ ]+).*/\1/p')
out=$(clean_env SCHEDC_LIBCUDA=/nonexistent/libcuda.so.1 "$S" info)
grep -qE '^  CUDA driver +not found: .*/nonexistent/libcuda.so.1.*SCHEDC_LIBCUDA' <<<"$out" && ok || bad "a driver that cannot load is not named" "$(grep 'CUDA driver' <<<"$out")"
grep -qE '^  cuda +no: ' <<<"$out" && grep -q '^gpus: 0' <<<"$out" && ok || bad "no driver: cuda usable?" "$out"

# ---- cpu: counts, affinity, NUMA, the vector path ----------------------------------------------
on=$(getconf _NPROCESSORS_ONLN); us=$(clean_env nproc)
grep -qx "  cpus: $on online, $us usable by this process" "$tmp/info.txt" && ok || bad "cpus (getconf $on, nproc $us)" "$(grep cpus: "$tmp/info.txt")"
[ "$(jq_ cpu cpus_online <"$tmp/info.json")" = "$on" ] && ok || bad "JSON cpus_online"
if command -v taskset >/dev/null; then
  out=$(clean_env taskset -c 0 "$S" info)
  grep -qx "  cpus: $on online, 1 usable by this process" <<<"$out" && ok || bad "taskset -c 0: usable cpus" "$(grep cpus: <<<"$out")"
fi
nn=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
if command -v lscpu >/dev/null && lscpu | grep -q '^NUMA node(s):'; then nn=$(lscpu | sed -n 's/^NUMA node(s): *//p'); fi
grep -qE "^  numa nodes: $nn( |$)" "$tmp/info.txt" && ok || bad "numa nodes (want $nn)" "$(grep numa "$tmp/info.txt")"
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { [[ "$flags" == *" $1 "* ]]; }
if [ "$(uname -m)" != x86_64 ]; then best=generic; base=generic
elif has avx512f && has avx512dq && has avx512vl && has avx512bw && has f16c && has avx2; then best=avx512; base=scalar
elif has avx2 && has f16c; then best=avx2; base=scalar
else best=scalar; base=scalar; fi
red=$base; has avx2 && has f16c && red=avx2 # the loops built for AVX2 (SC_SIMD_FN), sanitizer trees too
f16=scalar; has f16c && has avx2 && f16=f16c
got=$(jq_ cpu vector_path <"$tmp/info.json")
want="{'best': '$best', 'reduce': '$red', "
[[ "$got" == "$want"* ]] && [[ "$got" == *"'f16': '$f16'"* ]] && ok || bad "vector path: $got (want best $best, reduce $red, f16 $f16)"
# SCHEDC_SIMD=scalar forces the portable loops: the report says what the dispatch then takes
if [ "$(uname -m)" = x86_64 ]; then
  out=$(clean_env SCHEDC_SIMD=scalar "$S" info)
  grep -q "^  vector path: scalar (reduce scalar, checksum two passes, f16 scalar, bf16 scalar, exact scalar)" <<<"$out" && ok ||
    bad "SCHEDC_SIMD=scalar: vector path" "$(grep 'vector path' <<<"$out")"
fi
grep -q "^  vector path: $best (reduce $red," "$tmp/info.txt" && ok || bad "text vector path" "$(grep 'vector path' "$tmp/info.txt")"

# ---- GPUs: the test plugin's emulated devices ----------------------------------------------------
out=$(clean_env SCHEDC_CUDA_PLUGIN="$EMU" SCHEDC_EMU_DEVICES=3 "$S" info --json)
[ "$(jq_ gpus count <<<"$out")" = 3 ] && [ "$(jq_ gpus devices 2 arch <<<"$out")" = sm_90 ] && ok || bad "3 emulated GPUs not seen" "$out"
"$PY" -c 'import json, sys; b = {x["name"]: x for x in json.load(sys.stdin)["backends"]}; sys.exit(not (b["cuda"]["available"] and "SCHEDC_CUDA_PLUGIN" in b["cuda"]["detail"]))' <<<"$out" && ok || bad "cuda on the plugin: not usable or not said" "$out"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  n=$(nvidia-smi -L | grep -c '^GPU')
  grep -q "^gpus: $n" "$tmp/info.txt" && ok || bad "nvidia-smi lists $n GPUs" "$(grep -A2 ^gpus "$tmp/info.txt")"
fi

# ---- kernel cache and /dev/shm ------------------------------------------------------------------
out=$(clean_env SCHEDC_CACHE_DIR="$tmp/kc/sub" "$S" info)
grep -qx "kernel cache: $tmp/kc/sub" <<<"$out" && [ -d "$tmp/kc/sub" ] && ok || bad "SCHEDC_CACHE_DIR not reported (or not made)" "$(grep 'kernel cache' <<<"$out")"
out=$(clean_env SCHEDC_CACHE_DIR=off "$S" info)
grep -qx "kernel cache: off" <<<"$out" && ok || bad "SCHEDC_CACHE_DIR=off" "$(grep 'kernel cache' <<<"$out")"
if df -B1 --output=avail /dev/shm >/dev/null 2>&1; then
  avail=$(df -B1 --output=avail /dev/shm | tail -1 | tr -d ' ')
  got=$(jq_ dev_shm free_bytes <"$tmp/info.json")
  # other programs write to /dev/shm meanwhile: within 256 MiB or 5%
  "$PY" -c "import sys; a, g = $avail, $got; sys.exit(abs(a - g) > max(256 << 20, a / 20))" && ok || bad "/dev/shm free $got, df says $avail"
fi

# ---- the environment ----------------------------------------------------------------------------
grep -qx 'environment: none of schedc.s variables is set' "$tmp/info.txt" || grep -q '^environment:$' "$tmp/info.txt" && ok || bad "environment section missing" "$(tail -5 "$tmp/info.txt")"
out=$(clean_env SCHEDC_SPIN=short SCHEDC_SLICE=64K SCHEDC_VERFY=full "$S" info)
grep -qx '  SCHEDC_SPIN=short' <<<"$out" && ok || bad "SCHEDC_SPIN=short not listed plainly" "$out"
grep -qxF "  SCHEDC_SLICE=64K  (refused: SCHEDC_SLICE='64K': expected a whole number of bytes in [4096, 2^30])" <<<"$out" && ok || bad "malformed SCHEDC_SLICE not refused as its readers refuse it" "$out"
grep -qxF "  SCHEDC_VERFY=full  (not read by the library: misspelt?)" <<<"$out" && ok || bad "misspelt SCHEDC_VERFY not flagged" "$out"
grep -qE "^  threads +no: SCHEDC_SLICE='64K'" <<<"$out" && ok || bad "threads usable under a malformed SCHEDC_SLICE?" "$(grep threads <<<"$out")"
job=$'q"b\\s\ttab\nnl\x01é'
out=$(clean_env SCHEDC_JOB="$job" SCHEDC_HOST_ID=$'bad\xffbyte' SCHEDC_VERFY=full "$S" info --json)
got=$(SCHEDC_WANT="$job" "$PY" -c 'import json, os, sys
d = {e["name"]: e for e in json.load(sys.stdin)["environment"]}
ok = d["SCHEDC_JOB"]["value"] == os.environ["SCHEDC_WANT"] and d["SCHEDC_JOB"]["known"] and not d["SCHEDC_JOB"]["refused"]
ok = ok and d["SCHEDC_HOST_ID"]["value"] == "bad\ufffdbyte" and d["SCHEDC_VERFY"]["known"] is False
print("yes" if ok else d)' <<<"$out" 2>&1)
[ "$got" = yes ] && ok || bad "JSON environment values not escaped or not round-tripped" "$got"

# ---- usage ---------------------------------------------------------------------------------------
for args in "info extra" "info --nope" "info -x"; do
  out=$("$S" $args 2>&1); rc=$?
  [ $rc = 2 ] && grep -q '^schedc info: ' <<<"$out" && ok || bad "schedc $args: exit $rc (want 2)" "$out"
done
"$S" info --help | grep -q '^usage: schedc info' && ok || bad "info --help"
"$S" --help | grep -q -- '--version' && "$S" --help | grep -q '^  info ' && ok || bad "schedc --help does not list info and --version"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
