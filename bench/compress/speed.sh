#!/usr/bin/env bash
# speed.sh [BUILD_DIR] — compression's speed on shm (issue 37, docs/compression.md), side by side
# in one run: `schedc bench --backend shm`, allreduce of f32 data, the same element counts for every
# configuration (1K, 16K, 256K, 4M and 16M elements: 4 KiB to 64 MiB of f32), 2 ranks (RANKS to
# change), ROUNDS rounds (default 3) with the five configurations interleaved in each: f32 (the
# plain sum), exact (64-bit integers), q16, q8 (16- and 8-bit integers on the grid), top1 (top-k
# 1%). Writes, with the date, the machine and its load, bench/compress/speed_shm.tsv: per rank count
# and element count the bytes each rank's plan moves per element, f32's median p50 per call, and
# each configuration's median p50 over f32's in the same round with the lowest and highest ratio;
# speed_shm_raw.tsv every round's rows (bench/compress/, not bench/results/: report.sh's current figures
# take quiet runs only; these go to the journal). A machine shared with other work makes the ratios noisy: the
# load average is recorded before and after.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
S=$B/schedc
ROUNDS=${ROUNDS:-3}
RANKS=${RANKS:-2}
ELEMS=(1024 16384 262144 4194304 16777216)
res=bench/compress
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sizes=""; for e in "${ELEMS[@]}"; do sizes="$sizes${sizes:+,}$((e * 4))"; done
load0=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "# speed_shm.tsv — compressed allreduce (q8, q16, top-k 1%) and exact mode against the f32 sum (bench/compress/speed.sh)"
  echo "# date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "# machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo); $("$S" info | sed -n 's/^  vector path: //p')"
  echo "# command: bench/compress/speed.sh (ROUNDS=$ROUNDS RANKS=$RANKS), schedc $("$S" --version | sed 's/^schedc //'), backend shm, f32 data"
} >"$tmp/head"
for n in $RANKS; do
  for r in $(seq "$ROUNDS"); do
    for cfg in f32 exact q16 q8 top1; do
      args=()
      case $cfg in
        exact) args=(--exact) ;;
        q16 | q8) args=(--wire "$cfg") ;;
        top1) args=(--topk 0.01) ;;
      esac
      # bench's columns: size count type op time_us algbw busbw p50_us p99_us max_us iters
      "$S" bench --backend shm --ranks "$n" --sizes "$sizes" --dtype f32 "${args[@]}" |
        awk -v n="$n" -v c="$cfg" -v r="$r" '!/^#/ { print n, c, r, $2, $1, $5, $8, $9, $10 }' >>"$tmp/rows"
    done
  done
done
echo "# load average (1, 5, 15 min): $load0 before, $(cut -d' ' -f1-3 /proc/loadavg) after" >>"$tmp/head"
{
  cat "$tmp/head"
  echo "# bytes/elem: what each rank's plan moves per element of the f32 input in one direction over a"
  echo "# ring allreduce (2(n-1)/n of the payload's width; top1: the (n-1) gathered pairs of 8 bytes per 100 elements)"
  echo "# columns: ranks elements config bytes_per_elem f32_p50_us ratio ratio_lo ratio_hi p99_ratio rounds"
  awk '{ p[$1, $2, $3, $4] = $7; q[$1, $2, $3, $4] = $8; k[$1, $4] = 1; r[$3] = 1 }
    function med(a, m,   i, j, t) { for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
    END { split("f32 exact q16 q8 top1", cs, " "); split("4 8 2 1 0", w, " ")
      for (key in k) { split(key, a, SUBSEP); n = a[1]
        m = 0; for (x in r) if ((n, "f32", x, a[2]) in p) f[++m] = p[n, "f32", x, a[2]]
        fm = med(f, m)
        for (c = 1; c <= 5; c++) { m = 0; lo = hi = 0; mq = 0
          for (x in r) if (((n, cs[c], x, a[2]) in p) && p[n, "f32", x, a[2]] > 0) {
            v[++m] = p[n, cs[c], x, a[2]] / p[n, "f32", x, a[2]]; u[m] = q[n, cs[c], x, a[2]] / q[n, "f32", x, a[2]]
            if (m == 1 || v[m] < lo) lo = v[m]; if (m == 1 || v[m] > hi) hi = v[m] }
          bpe = cs[c] == "top1" ? (n - 1) * 8 * 0.01 : w[c] * 2 * (n - 1) / n
          if (m) printf "%s %s %s %.3f %.1f %.3f %.3f %.3f %.3f %d\n", n, a[2], cs[c], bpe, fm, med(v, m), lo, hi, med(u, m), m } } }' "$tmp/rows" |
    sort -k1,1n -k2,2n
} >"$res/speed_shm.tsv"
{ cat "$tmp/head"; echo "# columns: ranks config round elements size_bytes time_us p50_us p99_us max_us"; cat "$tmp/rows"; } >"$res/speed_shm_raw.tsv"
cat "$res/speed_shm.tsv"
