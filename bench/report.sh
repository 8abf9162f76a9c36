#!/usr/bin/env bash
# report.sh [RESULTS_DIR] — docs/performance.md's "Current figures" and their plots, from the
# benchmarks' outputs committed in bench/results/ (RESULTS_DIR; bench/results/README.md says what
# each file is and which benchmark writes it). Each table names the run it comes from — date,
# machine, command — as its file records them; nothing here measures anything. Writes
# bench/plots/{cpu,torch,costs}.svg (busBW against size, log-log; costs.svg when costs.tsv holds a sweep) and the text between the
# report markers of docs/performance.md. Run it after a benchmark rewrote one of the files (compare.sh
# and costs.sh call it themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
R=${1:-bench/results}
DOC=docs/performance.md
mkdir -p bench/plots
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for f in cpu_compare torch_allreduce costs verify gpu; do
  [ -s "$R/$f.tsv" ] || { echo "report.sh: $R/$f.tsv is missing (bench/results/README.md says what writes it)" >&2; exit 1; }
done
grep -q '^<!-- report:begin' "$DOC" && grep -q '^<!-- report:end' "$DOC" ||
  { echo "report.sh: $DOC has no report markers" >&2; exit 1; }
meta() { sed -n "s/^# $2: //p" "$R/$1.tsv" | head -1; }
rows() { grep -v '^#' "$R/$1.tsv"; }
# a table's source: date, machine, command; and a "# caveat:" line of the file, when it has one
source_line() {
  echo "*$(meta "$1" date), $(meta "$1" machine); \`$(meta "$1" command)\`.*"
  local c; c=$(meta "$1" caveat)
  [ -z "$c" ] || echo "$c"
}

# plot TITLE OUT: lines "series ranks size busbw" on stdin -> an SVG, busBW (log) against size (log),
# a colour per series, solid for 2 ranks and dashed for 4
plot() {
  awk -v title="$1" '$4 > 0 && $3 > 0' | awk -v title="$1" '
  BEGIN { W = 760; H = 460; L = 70; R = 190; T = 30; Bm = 50; split("#1f77b4 #2ca02c #d62728 #9467bd #ff7f0e #7f7f7f #8c564b #e377c2", pal, " ") }
  { sys[NR] = $1; nn[NR] = $2; x[NR] = log($3) / log(2); y[NR] = log($4) / log(10); N = NR
    if (!($1 in col)) col[$1] = pal[++nc]
    if (NR == 1 || x[NR] < x0) x0 = x[NR]; if (NR == 1 || x[NR] > x1) x1 = x[NR]
    if (NR == 1 || y[NR] < y0) y0 = y[NR]; if (NR == 1 || y[NR] > y1) y1 = y[NR] }
  function legend(s) { gsub(/_/, " ", s); return s }
  END {
    y0 = int(y0) - (y0 < 0 ? 1 : 0); y1 = int(y1) + 1; if (x1 == x0) x1 = x0 + 1
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"11\">\n", W, H
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    printf "<text x=\"%d\" y=\"18\" font-size=\"13\">%s (solid: 2 ranks, dashed: 4 ranks)</text>\n", L, title
    for (d = y0; d <= y1; d++) { py = T + (H - T - Bm) * (1 - (d - y0) / (y1 - y0))
      printf "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L, W - R, py, py, L - 5, py + 4, 10 ^ d }
    for (e = int(x0); e <= x1; e += 2) { if (e < x0) continue; px = L + (W - L - R) * (e - x0) / (x1 - x0)
      lab = e >= 20 ? sprintf("%gM", 2 ^ (e - 20)) : e >= 10 ? sprintf("%gK", 2 ^ (e - 10)) : sprintf("%g", 2 ^ e)
      printf "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/><text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", px, px, T, H - Bm, px, H - Bm + 15, lab }
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">size (bytes)</text>\n", (L + W - R) / 2, H - 12
    printf "<text x=\"15\" y=\"%d\" transform=\"rotate(-90 15 %d)\" text-anchor=\"middle\">busBW (GB/s)</text>\n", H / 2, H / 2
    k = 0
    for (i = 1; i <= N; i++) { key = sys[i] " " nn[i]; if (!(key in pts)) order[++k] = key
      px = L + (W - L - R) * (x[i] - x0) / (x1 - x0); py = T + (H - T - Bm) * (1 - (y[i] - y0) / (y1 - y0))
      pts[key] = pts[key] sprintf("%.1f,%.1f ", px, py) }
    for (j = 1; j <= k; j++) { split(order[j], a, " "); dash = a[2] == 4 ? " stroke-dasharray=\"5,3\"" : ""
      printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>\n", col[a[1]], dash, pts[order[j]]
      printf "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/><text x=\"%d\" y=\"%d\">%s, %s ranks</text>\n", W - R + 10, W - R + 35, T + 16 * j, T + 16 * j, col[a[1]], dash, W - R + 40, T + 16 * j + 4, legend(a[1]), a[2] }
    print "</svg>" }'
}
human() { awk -v s="$1" 'BEGIN { if (s >= 1048576) printf "%g MiB", s / 1048576; else if (s >= 1024) printf "%g KiB", s / 1024; else printf "%d B", s }'; }
# time ratio a/b to 2 digits ("-" when either is missing)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else printf "-" }'; }

# ---- CPU: schedc beside Open MPI and Gloo ------------------------------------------------------
rows cpu_compare | awk '$2 != "ring" && $2 != "plain" { s = $2 == "tuned" ? "schedc" : $2 == "mpi" ? "Open MPI" : $2 == "gloo" ? "Gloo" : "roofline"; gsub(/ /, "_", s); print s, $1, $3, $5 }' |
  plot "allreduce f32, processes on one host: busBW" >bench/plots/cpu.svg
{
  echo "### CPU: schedc beside Open MPI and Gloo"
  echo
  source_line cpu_compare
  echo "Processes on one host, f32 sum allreduce, time per call (mean, slowest rank); schedc runs the plan"
  echo "\`schedc tune\` chose for the size; *× MPI*, *× Gloo*: their time over schedc's (> 1: schedc faster)."
  echo "Every size, the plain-buffer column and the busy-neighbour tails: [bench/results.md](../bench/results.md)."
  echo
  echo "| ranks | size | schedc µs (plan) | Open MPI µs | Gloo µs | × MPI | × Gloo |"
  echo "|---:|---:|---:|---:|---:|---:|---:|"
  for n in 2 4; do
    for s in 8 4096 1048576 67108864; do
      t=$(rows cpu_compare | awk -v n=$n -v s=$s '$1 == n && $3 == s && $2 == "tuned" { print $4, $6 }')
      m=$(rows cpu_compare | awk -v n=$n -v s=$s '$1 == n && $3 == s && $2 == "mpi" { print $4 }')
      g=$(rows cpu_compare | awk -v n=$n -v s=$s '$1 == n && $3 == s && $2 == "gloo" { print $4 }')
      [ -n "$t" ] || continue
      echo "| $n | $(human $s) | ${t% *} (${t#* }) | ${m:--} | ${g:--} | $(ratio "${m:-0}" "${t% *}") | $(ratio "${g:-0}" "${t% *}") |"
    done
  done
  echo
  echo "![busBW against size: schedc, Open MPI, Gloo and the memory roofline](../bench/plots/cpu.svg)"
  echo
} >"$tmp/cpu.md"

# ---- the torch backend beside gloo ---------------------------------------------------------------
rows torch_allreduce | awk '{ print ($2 == "schedc" ? "schedc" : "gloo"), $1, $3, $5 }' |
  plot "torch dist.all_reduce f32 (CPU): busBW" >bench/plots/torch.svg
{
  echo "### PyTorch: the \`schedc\` backend beside gloo"
  echo
  source_line torch_allreduce
  echo "\`dist.all_reduce\` of a float32 CPU tensor, median time per call; *× gloo*: gloo's time over schedc's."
  echo
  echo "| ranks | size | gloo µs | schedc µs | × gloo |"
  echo "|---:|---:|---:|---:|---:|"
  for n in 2 4; do
    for s in 4096 1048576 67108864; do
      g=$(rows torch_allreduce | awk -v n=$n -v s=$s '$1 == n && $3 == s && $2 == "gloo" { print $4 }')
      c=$(rows torch_allreduce | awk -v n=$n -v s=$s '$1 == n && $3 == s && $2 == "schedc" { print $4 }')
      [ -n "$c" ] && echo "| $n | $(human $s) | ${g:--} | $c | $(ratio "${g:-0}" "$c") |"
    done
  done
  sed -n 's/^# ddp_step_ms: //p' "$R/torch_allreduce.tsv" | awk 'BEGIN { printf "\nA DDP step (ms, median):" }
    { printf "%s %s ranks gloo %s, schedc %s", (NR > 1 ? ";" : ""), $1, $3, $5 } END { print "." }'
  echo
  echo "![busBW against size: schedc and gloo as torch.distributed backends](../bench/plots/torch.svg)"
  echo
} >"$tmp/torch.md"

# ---- f16/bf16, exact mode, verification: over f32 ----------------------------------------------
# costs.tsv and verify.tsv: per (ranks, elements) f32's time and each configuration's median ratio
# to f32 of the same round, with the lowest and highest ratio
costs_table() { # FILE CONFIG...
  local f=$1; shift
  rows "$f" | awk -v cs="$*" 'BEGIN { n = split(cs, c, " ") }
    { v[$1, $2, $3] = sprintf("%.2f (%.2f–%.2f)", $5, $6, $7); if ($3 == "f32" || !(($1, $2) in t)) t[$1, $2] = $4
      if (!(($1, $2) in seen)) { seen[$1, $2] = 1; k[++m] = $1 " " $2 } }
    END { for (i = 1; i <= m; i++) { split(k[i], a, " "); e = a[2]
            lab = e * 4 >= 1048576 ? sprintf("%gM (%g MiB of f32)", e / 1048576, e * 4 / 1048576) : sprintf("%gK (%g KiB of f32)", e / 1024, e * 4 / 1024)
            printf "| %s | %s | %.1f", a[1], lab, t[a[1], e] / 1000
            for (j = 1; j <= n; j++) printf " | %s", ((a[1], e, c[j]) in v) ? v[a[1], e, c[j]] : "-"
            print " |" } }'
}
# the plot needs a sweep (bench/costs.sh measures four sizes); a file of one size gets none
if [ "$(rows costs | awk '{ print $2 }' | sort -u | wc -l)" -gt 1 ]; then
  rows costs | awk '$3 != "f32" || 1 { t = $4 * $5; if (t > 0) print $3, $1, $2 * 4, $2 * 4 / (t * 1e3) * 2 * ($1 - 1) / $1 }' |
    plot "allreduce, f32-equivalent busBW (4 B per element) by type" >bench/plots/costs.svg
  costs_plot="![f32-equivalent busBW against size: f32, bf16, f16, exact](../bench/plots/costs.svg)"
else
  rm -f bench/plots/costs.svg; costs_plot=""
fi
{
  echo "### Data types, exact mode and verification: the cost over the f32 sum"
  echo
  echo "\`schedc bench --backend shm\`, allreduce sum, the same element count for every type; f32: ms per call;"
  echo "the others: their time over f32's, the median over the rounds of one run, its lowest–highest in"
  echo "brackets (1.00: as fast as f32; below: faster)."
  echo
  source_line costs
  echo
  echo "| ranks | elements | f32 ms | bf16 | f16 | exact |"
  echo "|---:|---:|---:|---:|---:|---:|"
  costs_table costs bf16 f16 exact
  echo
  source_line verify
  echo
  echo "| ranks | elements | f32 ms | digest | checksum | full |"
  echo "|---:|---:|---:|---:|---:|---:|"
  costs_table verify digest checksum full
  echo
  [ -z "$costs_plot" ] || { echo "$costs_plot"; echo; }
} >"$tmp/costs.md"

# ---- GPU ------------------------------------------------------------------------------------------
{
  echo "### GPU (the cuda backend), last measured $(meta gpu date)"
  echo
  source_line gpu
  echo
  echo "| what | figure |"
  echo "|---|---|"
  rows gpu | awk -F'\t' 'NF == 2 { printf "| %s | %s |\n", $1, $2 }'
  echo
} >"$tmp/gpu.md"

{
  echo "<!-- report:begin (written by bench/report.sh from bench/results/: do not edit by hand) -->"
  echo "## Current figures"
  echo
  echo "One short table per area, each from the latest run recorded in [\`bench/results/\`](../bench/results/README.md),"
  echo "which names its date, machine and command: a run on another machine or date than its neighbours says so."
  echo "How each was measured, what was expected and why the numbers are what they are: the [journal](#journal)"
  echo "below. \`bench/report.sh\` rewrites this section and the plots from those files."
  echo
  cat "$tmp/cpu.md" "$tmp/torch.md" "$tmp/costs.md" "$tmp/gpu.md"
  echo "<!-- report:end -->"
} >"$tmp/section.md"
awk -v f="$tmp/section.md" '/^<!-- report:begin/ { while ((getline l < f) > 0) print l; skip = 1; next }
                            /^<!-- report:end/ { skip = 0; next } !skip' "$DOC" >"$tmp/doc.md"
cp "$tmp/doc.md" "$DOC"
echo "report.sh: wrote the current figures in $DOC and $(ls bench/plots/*.svg | tr '\n' ' ')"
