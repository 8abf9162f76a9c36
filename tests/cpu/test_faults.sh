#!/usr/bin/env bash
# test_faults.sh SCHEDC SCHEDULES_DIR — never hang: a killed rank (thread or process) and a rank
# slower than the timeout make the others return errors naming the step and the rank, quickly.
set -u
S=$1; D=$2
pass=0; fail=0
t() {  # t NAME MAX_SECONDS PATTERN... -- CMD...
  local name=$1 max=$2; shift 2
  local pats=()
  while [ "$1" != -- ]; do pats+=("$1"); shift; done; shift
  local t0=$(date +%s.%N)
  out=$("$@" 2>&1); rc=$?
  local dt=$(echo "$(date +%s.%N) - $t0" | bc)
  local ok=1
  [ $rc = 1 ] || { echo "FAIL $name: exit $rc (want 1)"; ok=0; }
  for p in "${pats[@]}"; do grep -qF -- "$p" <<<"$out" || { echo "FAIL $name: missing '$p'"; ok=0; }; done
  [ "$(echo "$dt < $max" | bc)" = 1 ] || { echo "FAIL $name: took $dt s (limit $max)"; ok=0; }
  if [ $ok = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "$out"; fi
}
export SCHEDC_INJECT=kill:1:2
t thread-killed 4 "rank 1: error: allreduce: rank 1 killed by fault injection (SCHEDC_INJECT) at step 2" \
  "which died (rank 1 was killed by fault injection at step 2)" -- "$S" run "$D/ring.lua" --ranks 4 --count 100000 --timeout 30
export SCHEDC_INJECT=kill:2:3
t process-killed 4 "rank 2: error: process died (signal 9)" "it waited for rank 2, which died" \
  -- "$S" run "$D/ring.lua" --ranks 4 --backend shm --count 100000 --timeout 30
# rank 1 relays the broadcast to ranks 3 and 4 in the heap tree: they must notice it died
export SCHEDC_INJECT=kill:1:1
t relay-killed 4 "rank 1: error: process died (signal 9)" "it waited for rank 1, which died" \
  -- "$S" run "$D/tree.lua" --ranks 5 --backend shm --count 1000 --timeout 30 -D collective=broadcast
export SCHEDC_INJECT=delay:3:700000
t slow-rank 6 "timed out after 0.3 s on rank" \
  -- "$S" run "$D/ring.lua" --ranks 4 --count 1000 --timeout 0.3
export SCHEDC_INJECT=delay:2:700000
t slow-process 6 "timed out after 0.3 s on rank" \
  -- "$S" run "$D/direct.lua" --ranks 3 --backend shm --count 1000 --timeout 0.3
unset SCHEDC_INJECT
SCHEDC_INJECT=bogus:1:2 "$S" run "$D/ring.lua" --ranks 2 --count 10 >/tmp/schedc_inj.$$ 2>&1
if grep -qF "SCHEDC_INJECT: unknown fault 'bogus'" /tmp/schedc_inj.$$; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL bad inject spec"; cat /tmp/schedc_inj.$$; fi
rm -f /tmp/schedc_inj.$$
# left behind = segments of a `schedc run` that has exited (other tests may be running now;
# this tree's job ids are runPID-<32 hex digits>: other names are not this test's)
left=0
for f in /dev/shm/schedc-run*; do
  [ -e "$f" ] || continue
  pid=$(sed -n 's|^/dev/shm/schedc-run\([0-9]*\)-[0-9a-f]\{32\}-.*|\1|p' <<<"$f")
  [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && left=$((left + 1))
done
if [ "$left" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $left shared segments left behind"; fi
echo "$pass passed, $fail failed"
[ $fail = 0 ]
