#!/usr/bin/env bash
# test_emit_cli.sh SCHEDC SCHEDULES_DIR GOLDEN — `schedc emit-cuda` and `compile --target cuda`
# as a user runs them: per-rank .cu (matching the reviewed golden for ring, 3 ranks, rank 1) and
# .ptx, f32 sums as add.rn.f32 with no fma, an 8-rank plan compiled, then served from the cache.
set -u
S=$1; D=$2; G=$3
"$S" emit-cuda "$D/ring.lua" --ranks 2 --ptx -o /tmp/schedc_probe_$$ >/dev/null 2>&1
if grep -q "NVRTC is not available" <("$S" emit-cuda "$D/ring.lua" --ranks 2 --ptx -o /tmp/schedc_probe_$$ 2>&1); then
  rm -rf /tmp/schedc_probe_$$; . "$(dirname "$0")/../skip.sh"; sc_skip_tool NVRTC "schedc emit-cuda --ptx: NVRTC is not available"; fi
rm -rf /tmp/schedc_probe_$$
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export SCHEDC_CACHE_DIR=$tmp/cache
pass=0; fail=0
ok() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
(cd "$D" && "$S" emit-cuda ring.lua --ranks 3 -o "$tmp/src") >/dev/null
ok "diff -u '$G' '$tmp/src/rank1.cu'" "emitted source differs from the golden $G"
"$S" emit-cuda "$D/direct.lua" --ranks 5 --ptx --arch sm_90 -o "$tmp/d" > "$tmp/log" 2>&1
ok "[ \$(ls $tmp/d/*.cu | wc -l) = 5 ] && [ \$(ls $tmp/d/*.ptx | wc -l) = 5 ]" "five .cu and .ptx files"
ok "grep -q add.rn.f32 $tmp/d/rank0.ptx && ! grep -q fma $tmp/d/*.ptx" "add.rn.f32 and no fma"
ok "[ \$(tr -d '\\000' < $tmp/d/rank0.ptx | wc -c) = \$(wc -c < $tmp/d/rank0.ptx) ]" ".ptx is text: no NUL byte (ptxas reads it)"
ok "! grep -q '#include' $tmp/d/*.cu" "no headers"
out=$("$S" compile "$D/hierarchical.lua" --ranks 8 --nodes 2 --target cuda --arch sm_90 -o "$tmp/h.plan")
t1=$(sed -n 's/.* in \([0-9.]*\) s (compiled.*/\1/p' <<<"$out")
out2=$("$S" compile "$D/hierarchical.lua" --ranks 8 --nodes 2 --target cuda --arch sm_90 -o "$tmp/h.plan")
t2=$(sed -n 's/.* in \([0-9.]*\) s (cache hit.*/\1/p' <<<"$out2")
echo "8-rank hierarchical plan: NVRTC ${t1:-?} s, cached ${t2:-?} s"
# The times are printed, not asserted (speed is for benchmarks: docs/performance.md has them); what
# is checked is that the first call compiled and the second was served from the cache.
ok "[ -n '$t1' ]" "the first compile reports NVRTC compiling: $out"
ok "[ -n '$t2' ]" "the second compile is a cache hit: $out2"
ok "'$S' check '$tmp/h.plan' >/dev/null" "the plan file written by compile --target cuda loads"
echo "$pass passed, $fail failed"
[ $fail = 0 ]
