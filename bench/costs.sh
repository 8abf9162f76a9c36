#!/usr/bin/env bash
# costs.sh [BUILD_DIR] — what f16 and bf16 (summed in f32), exact mode (64-bit integers on a shared
# grid) and verification (SCHEDC_VERIFY=digest, checksum) cost over the plain f32 sum, side by side
# in one run: `schedc bench --backend shm`, allreduce, the same element counts for every type
# (16K, 256K, 4M and 16M elements: 64 KiB to 64 MiB of f32), 2 and 4 ranks, ROUNDS rounds (default
# 3) with the six configurations interleaved in each, so a change of load hits them alike.
# Writes, with the date, the machine and its load: bench/results/costs.tsv (f32, bf16, f16, exact)
# and verify.tsv (f32 unverified, digest, checksum, full): per rank count and element count the
# median over rounds of f32's p50 per call, and of each configuration's p50 over f32's in the same
# round, with the lowest and highest of those ratios; costs_raw.tsv every round's rows. Then runs
# bench/report.sh. On a machine shared with other work the ratios are noise: measure on a quiet one.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
S=$B/schedc
ROUNDS=${ROUNDS:-3}
ELEMS=(16384 262144 4194304 16777216)
res=bench/results
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes() { local w=$1 s="" e; for e in "${ELEMS[@]}"; do s="$s${s:+,}$((e * w))"; done; echo "$s"; }
load0=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# costs.tsv — f16, bf16, exact mode and verification against the f32 sum (bench/costs.sh)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "# machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $("$S" info | sed -n 's/^  vector path: //p')"
  echo "# command: bench/costs.sh (ROUNDS=$ROUNDS), schedc $("$S" --version | sed 's/^schedc //')"
  echo "# columns: ranks config round elements size_bytes time_us p50_us p99_us max_us"
} >"$tmp/head"
for n in 2 4; do
  for r in $(seq "$ROUNDS"); do
    for cfg in f32 bf16 f16 exact digest checksum full; do
      args=(--dtype f32) verify=none w=4
      case $cfg in
        bf16 | f16) args=(--dtype "$cfg") w=2 ;;
        exact) args=(--dtype f32 --exact) ;;
        digest | checksum | full) verify=$cfg ;;
      esac
      # columns of bench: size count type op time_us algbw busbw p50_us p99_us max_us iters
      SCHEDC_VERIFY=$verify "$S" bench --backend shm --ranks "$n" --sizes "$(sizes $w)" "${args[@]}" |
        awk -v n="$n" -v c="$cfg" -v r="$r" '!/^#/ { print n, c, r, $2, $1, $5, $8, $9, $10 }' >>"$tmp/rows"
    done
  done
done
echo "# load average (1, 5, 15 min): $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after" >>"$tmp/head"
# summary NAME CONFIGS...: per (ranks, elements), f32's median p50 and each config's median, lowest
# and highest ratio to f32's p50 of the same round
summary() {
  local name=$1; shift
  {
    sed "s/^# costs.tsv — .*/# $name.tsv — $*: the p50 per call over f32's (bench\/costs.sh)/" "$tmp/head" | grep -v '^# columns'
    echo "# columns: ranks elements config f32_us ratio ratio_lo ratio_hi rounds"
    awk -v want=" $* " '{ p[$1, $2, $3, $4] = $7; k[$1, $4] = 1; r[$3] = 1 }
      function med(a, m,   i, j, t) { for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
      END { n = split(substr(want, 2, length(want) - 2), cs, " ")
        for (key in k) { split(key, a, SUBSEP)
          m = 0; for (x in r) if ((a[1], "f32", x, a[2]) in p) f[++m] = p[a[1], "f32", x, a[2]]
          fm = med(f, m)
          for (c = 1; c <= n; c++) { m = 0; lo = hi = 0
            for (x in r) if (((a[1], cs[c], x, a[2]) in p) && p[a[1], "f32", x, a[2]] > 0) {
              v[++m] = p[a[1], cs[c], x, a[2]] / p[a[1], "f32", x, a[2]]
              if (m == 1 || v[m] < lo) lo = v[m]; if (m == 1 || v[m] > hi) hi = v[m] }
            if (m) printf "%s %s %s %.1f %.3f %.3f %.3f %d\n", a[1], a[2], cs[c], fm, med(v, m), lo, hi, m } } }' "$tmp/rows" |
      sort -k1,1n -k2,2n
  } >"$res/$name.tsv"
}
summary costs f32 bf16 f16 exact
summary verify f32 digest checksum full
{ cat "$tmp/head"; cat "$tmp/rows"; } >"$res/costs_raw.tsv"
bench/report.sh
