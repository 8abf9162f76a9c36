#!/bin/bash
# run_fuzz.sh TARGET SEEDS WORK SECONDS — one bounded libFuzzer run: the seeds (SEEDS: folders
# separated by ':', their files taken as they are) copied into
# WORK/corpus (new inputs land there, not in the source tree), then TARGET for SECONDS with a
# 10 s per-input limit (a hang is a finding) and 1 GiB of memory. Exit 0 when nothing was found;
# else the fuzzer's report and the path of the input that triggered it (WORK/crash-*, ...).
set -u
target=$1 seeds=$2 work=$3 secs=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work/corpus"
IFS=: read -ra dirs <<<"$seeds"
for d in "${dirs[@]}"; do
  for f in "$d"/*; do [ -f "$f" ] && cp "$f" "$work/corpus/$(basename "$d")_$(basename "$f")"; done
done
cd "$work" || exit 1
"$target" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$work/" corpus >fuzz.log 2>&1
rc=$?
# a target that cannot work here (fuzz_op without libclang) says so on its first input; libFuzzer's
# own exit status is 77 for a finding too, so the skip is decided here, never passed through
if grep -q '^\[SKIP\]' fuzz.log; then . "$here/../skip.sh"; sc_skip_tool libclang "$(grep -m1 '^\[SKIP\]' fuzz.log)"; fi
grep -E '^stat::number_of_executed_runs|^stat::new_units_added' fuzz.log
if [ $rc != 0 ]; then
  tail -60 fuzz.log
  echo "FAIL: $(basename "$target") found a problem; inputs: $(ls "$work" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | sed "s|^|$work/|" | tr '\n' ' ')"
  exit 1
fi
echo "PASS: $(basename "$target"): ${secs}s, no crash, leak, hang or sanitizer report"
