#!/usr/bin/env bash
# test_report.sh SRC — docs/performance.md's current figures and bench/plots/ are what
# bench/report.sh makes from bench/results/ (nobody edited the section by hand, no output changed
# without it): report.sh runs on a copy of bench/ and docs/performance.md, and the copy must come
# out unchanged. Then a planted change of one result must change the section.
set -u
SRC=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
copy() { mkdir -p "$1/docs" && cp -r "$SRC/bench" "$1/" && cp "$SRC/docs/performance.md" "$1/docs/"; }
copy "$tmp/a"
if ! out=$(bash "$tmp/a/bench/report.sh" 2>&1); then echo "FAIL: report.sh failed: $out"; exit 1; fi
for f in docs/performance.md bench/plots/cpu.svg bench/plots/torch.svg; do
  cmp -s "$SRC/$f" "$tmp/a/$f" || { echo "FAIL: $f differs from what bench/report.sh makes (run it and commit):"; diff "$SRC/$f" "$tmp/a/$f" | head -10; fail=1; }
done
[ "$(ls "$SRC/bench/plots")" = "$(ls "$tmp/a/bench/plots")" ] || { echo "FAIL: bench/plots holds other files than report.sh makes"; fail=1; }
# planted: Open MPI's 64 MiB time on 2 ranks doubled -> its row and ratio change
copy "$tmp/b"
awk '$1 == 2 && $2 == "mpi" && $3 == 67108864 { $4 = $4 * 2 } { print }' "$SRC/bench/results/cpu_compare.tsv" >"$tmp/b/bench/results/cpu_compare.tsv"
bash "$tmp/b/bench/report.sh" >/dev/null 2>&1
if cmp -s "$tmp/a/docs/performance.md" "$tmp/b/docs/performance.md"; then echo "FAIL: a changed result left the section as it was"; fail=1; fi
grep -q '^| 2 | 64 MiB | .* | 86004 |' "$tmp/b/docs/performance.md" || { echo "FAIL: the planted time is not in the table"; fail=1; }
[ $fail = 0 ] && echo "report: section and plots up to date"
exit $fail
