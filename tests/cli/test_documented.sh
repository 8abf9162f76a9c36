#!/usr/bin/env bash
# test_documented.sh SCHEDC SCHEDULES_DIR — the invocations docs/cli.md, README.md,
# scripts/demo.sh and bench/compare.sh show still work as written (options after FILE, FILE by
# name, -D k=v, launch's -- CMD with the command's own options after it), and the spellings
# getopt_long adds (options before FILE, --opt=V, -Dk=v, -- before FILE) mean the same. Sizes
# and iteration counts are cut where the documented ones only take longer. README.md's commands
# are read from the README itself and run exactly as written (from a folder with the build and
# the schedules where the README expects them), except the few named below with where they run.
set -u
S=$(realpath "$1"); D=$(realpath "$2")
R=$D/ring.lua
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0; fail=0
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2"; fail=$((fail + 1)); }
# ok NAME WANT_RC PATTERN CMD...: the exit status and a line of the output
ok() {
  local name=$1 want=$2 pat=$3; shift 3
  out=$(timeout 60 "$@" 2>&1); local rc=$?
  if [ "$rc" != "$want" ]; then bad "$name: exit $rc (want $want): $*" "$out"
  elif [ -n "$pat" ] && ! grep -qF -- "$pat" <<<"$out"; then bad "$name: missing '$pat': $*" "$out"
  else pass=$((pass + 1)); fi
}
# same NAME CMD1 -- CMD2: both exit 0 with the same output
same() {
  local name=$1; shift
  local a=() ; while [ "$1" != -- ]; do a+=("$1"); shift; done; shift
  local o1 o2 r1 r2
  o1=$(timeout 60 "${a[@]}" 2>&1); r1=$?; o1=$(grep -v '^time per iteration' <<<"$o1") # the only line that varies
  o2=$(timeout 60 "$@" 2>&1); r2=$?; o2=$(grep -v '^time per iteration' <<<"$o2")
  if [ $r1 = 0 ] && [ $r2 = 0 ] && [ "$o1" = "$o2" ]; then pass=$((pass + 1))
  else bad "$name: exit $r1 and $r2, outputs differ: ${a[*]} vs $*" "$(diff <(echo "$o1") <(echo "$o2") | head -10)"; fi
}

# ---- as documented --------------------------------------------------------------------------
ok check-name 0 "ring: ok: allreduce 'ring', 8 ranks" "$S" check ring --ranks 8
ok check 0 "ok: allreduce 'ring', 8 ranks (1 node)" "$S" check "$R" --ranks 8
ok check-canonical 0 "canonical order" "$S" check "$D/halving_doubling.lua" --ranks 8 -D order=canonical
ok check-ring-canonical 1 "rejected: no plan produced" "$S" check "$R" --ranks 8 -D order=canonical
ok show-order 0 "chunk 7:" "$S" show "$R" --ranks 8 --order
ok viz 0 "wrote ring8.svg" "$S" viz "$R" --ranks 8 -o ring8.svg
ok compile 0 "wrote x.plan" "$S" compile "$R" --ranks 8 -o x.plan
ok check-plan 0 "8 ranks" "$S" check x.plan
ok run-check 0 "all 4 ranks agree: yes" "$S" run "$R" --ranks 4 --check
ok run-check-error 0 "error vs float64 reference" "$S" run "$R" --ranks 4 --check
ok run-shm 0 "5 iterations, identical bits every time: yes" "$S" run "$R" --ranks 4 --backend shm --iters 5
ok run-name 0 "6 iterations, identical bits every time: yes" "$S" run ring --ranks 2 --count 4M --iters 6
ok run-verify 0 "all 4 ranks agree: yes" "$S" run "$R" --ranks 4 --count 1000 --verify full
ok run-repair 0 "all 4 ranks agree: yes" "$S" run "$R" --ranks 4 --count 1000 --verify full --repair
ok cost 0 "# schedc cost: hierarchical, allreduce, 32 ranks on 4 node(s)" \
  "$S" cost "$D/hierarchical.lua" --topology "$D/topologies/dgx_h100.lua" --sizes 1M,64M
ok bench 0 "backend threads, 2 ranks" "$S" bench --ranks 2 --sizes 8,4K --iters 2 --warmup 1
ok bench-file-shm 0 "# schedc bench: ring, allreduce, backend shm, 2 ranks" \
  "$S" bench "$R" --backend shm --ranks 2 --sizes 64K --iters 2 --warmup 1
# bench/compare.sh's forms
ok bench-compare 0 "in place" "$S" bench --backend shm --ranks 2 --sizes 8,64,512,4K --iters 20 --warmup 5 --plain --inplace
ok bench-minmax 0 "      4096" "$S" bench --ranks 2 --min 8 --max 4K --factor 8 --iters 1 --warmup 0
ok tune-model 0 "# cells: predicted us" "$S" tune --topology "$D/topologies/dgx_h100.lua" --model-only --sizes 8,1M
ok launch 0 "" "$S" launch -n 2 -- sh -c 'test "$SCHEDC_RANK" -lt 2 && test "$SCHEDC_NRANKS" = 2 && test "$WORLD_SIZE" = 2'
# what follows CMD is CMD's: launch does not read it (a bad --grace there is sh's argument)
ok launch-cmd-options 0 "" "$S" launch -n 2 -- sh -c 'test "$1" = --grace' sh --grace x
ok launch-fails 3 "a rank exited with status 3; stopping the others in 0.5 s" "$S" launch -n 2 --grace 0.5 -- sh -c 'exit 3'
# launch --hosts through a remote shell (a stand-in for ssh: HOST and one shell line, run here):
# torchrun's variables of a multi-node job, the folder, -x, and words with blanks and quotes
printf '#!/bin/sh\nh=$1; shift\n[ $# = 1 ] || { echo "want one line, got $#"; exit 9; }\nFAKEHOST=$h exec sh -c "$1"\n' >fakersh
chmod +x fakersh
mkdir -p sub && cd sub || exit 1
ok launch-hosts 0 "" "$S" launch --hosts a:2,b:1 --rsh ../fakersh -x "Q=it's a 'q'" -- sh -c \
  'echo "$RANK/$WORLD_SIZE $LOCAL_RANK/$LOCAL_WORLD_SIZE $GROUP_RANK/$GROUP_WORLD_SIZE $MASTER_ADDR:$MASTER_PORT $FAKEHOST ${PWD##*/} [$Q] [$1] ${TORCHELASTIC_RUN_ID%%[0-9]*}" >"../rank$RANK"' sh "x 'y' z"
cd .. || exit 1
want="0/3 0/2 0/2 a:29500 a sub [it's a 'q'] [x 'y' z] launch|1/3 1/2 0/2 a:29500 a sub [it's a 'q'] [x 'y' z] launch|2/3 0/1 1/2 a:29500 b sub [it's a 'q'] [x 'y' z] launch"
got=$(cat rank0 rank1 rank2 2>/dev/null | paste -sd'|')
[ "$got" = "$want" ] && pass=$((pass + 1)) || bad "launch --hosts: got '$got', want '$want'"
rm -f rank*
ok launch-hosts-node 0 "" "$S" launch --hosts a:2,b:2 -n 3 --map-by node --master-addr m --master-port 1234 \
  --host-cmd "env FAKEHOST=%h" -- sh -c 'echo "$RANK $LOCAL_RANK/$LOCAL_WORLD_SIZE $GROUP_RANK $MASTER_ADDR:$MASTER_PORT $FAKEHOST" >rank$RANK'
got=$(cat rank0 rank1 rank2 2>/dev/null | paste -sd'|')
want="0 0/2 0 m:1234 a|1 0/1 1 m:1234 b|2 1/2 0 m:1234 a"
[ "$got" = "$want" ] && pass=$((pass + 1)) || bad "launch --hosts --map-by node --host-cmd: got '$got', want '$want'"
ok launch-hosts-fails 3 "rank 1 (on b) exited with status 3" "$S" launch --hosts a,b --host-cmd "env H=%h" --grace 0.5 -- sh -c '[ "$RANK" = 1 ] && exit 3; exit 0'
# SIGINT to launch: the ranks get SIGTERM at once (they exit 0 here), launch exits 128 + 2
"$S" launch -n 2 -- sh -c 'trap "touch term.$SCHEDC_RANK; kill \$!; exit 0" TERM; touch up.$SCHEDC_RANK; sleep 30 & wait' &
P=$!
for _ in $(seq 100); do [ -e up.0 ] && [ -e up.1 ] && break; sleep 0.05; done
kill -INT $P; wait $P; rc=$?
[ $rc = 130 ] && [ -e term.0 ] && [ -e term.1 ] && pass=$((pass + 1)) || bad "launch SIGINT: exit $rc, $(ls)"
for c in check show compile viz emit-cuda run launch bench cost tune topo info check-op; do
  ok "help-$c" 0 "usage: schedc $c" "$S" $c --help
  ok "help-h-$c" 0 "usage: schedc $c" "$S" $c -h
done

# ---- the same, spelled as getopt_long allows ---------------------------------------------------
same before-file "$S" check "$R" --ranks 8 -- "$S" check --ranks 8 "$R"
same equals "$S" check "$R" --ranks 8 -- "$S" check "$R" --ranks=8
same define-joined "$S" check "$D/halving_doubling.lua" --ranks 8 -D order=canonical -- \
  "$S" check "$D/halving_doubling.lua" --ranks 8 -Dorder=canonical
same dashes "$S" show "$R" --ranks 4 --steps -- "$S" show --ranks 4 --steps -- "$R"
same run-order "$S" run "$R" --ranks 3 --count 99 --seed 7 -- "$S" run --seed=7 --count 99 --ranks 3 "$R"
same cost-file-last "$S" cost "$D/hierarchical.lua" --topology "$D/topologies/dgx_h100.lua" --sizes 8,1M -- \
  "$S" cost --sizes=8,1M --topology "$D/topologies/dgx_h100.lua" "$D/hierarchical.lua"
# a file named like an option, after --
cp "$R" ./--ranks
ok dash-file 0 "--ranks: ok: allreduce 'ring', 2 ranks" "$S" check --ranks 2 -- --ranks
# the same rank digests on threads and shm, whatever the option order (run's digests line up)
a=$("$S" run "$R" --ranks 4 --count 1000 | grep '^rank'); b=$("$S" run --backend shm --count 1000 --ranks 4 "$R" | grep '^rank')
[ -n "$a" ] && [ "$a" = "$b" ] && pass=$((pass + 1)) || bad "threads and shm digests differ" "$a
$b"

# ---- README.md: every command it shows, read from it and run as written ----------------------
# Commands: the lines of its ```sh blocks (a trailing "  # comment" dropped) and the `code spans`
# that start with build/, ./scripts/ or schedc (the installed command: the build's, on PATH),
# after any VAR=value assignments, and hold an argument.
SRC=$(dirname "$D"); BUILD=$(dirname "$S")
readme_cmds() {
  /usr/bin/python3 - "$SRC/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
cmds = []
for block in re.findall(r"```sh\n(.*?)```", text, re.S):
    cmds += [re.sub(r"\s+#\s.*$", "", l).strip() for l in block.splitlines() if l.strip()]
for span in re.findall(r"`([^`\n]+)`", text):
    if re.match(r"^([A-Z_][A-Z0-9_]*=\S+ )*(build/\S+|\./scripts/\S+|schedc) \S", span):
        cmds.append(span)
print("\n".join(cmds))
PY
}
# Not run here, each with where it runs: the quick start runs this suite itself; installing is
# what the install tests do into a scratch prefix; pip would change the system's Python (the
# python tests import the package from the source tree).
readme_elsewhere=(
  "./scripts/demo.sh" "./scripts/test.sh"
  "cmake --install build --prefix /usr/local" 'cc app.c $(pkg-config --cflags --libs schedc)'
  "pip install --no-build-isolation ./python"
)
cmds=$(readme_cmds)
mkdir -p "$tmp/readme" && ln -s "$BUILD" "$tmp/readme/build" && ln -s "$SRC/schedules" "$tmp/readme/schedules"
nr=0
while IFS= read -r c; do
  [ -n "$c" ] || continue
  nr=$((nr + 1))
  skip=0; for e in "${readme_elsewhere[@]}"; do [ "$c" = "$e" ] && skip=1; done
  [ $skip = 1 ] && continue
  out=$(cd "$tmp/readme" && PATH="$BUILD:$PATH" timeout 120 bash -c "$c" 2>&1); rc=$?
  if [ $rc = 0 ]; then pass=$((pass + 1)); else bad "README.md: exit $rc: $c" "$(tail -5 <<<"$out")"; fi
done <<<"$cmds"
for e in "${readme_elsewhere[@]}"; do # an exemption the README no longer has is stale
  grep -qxF -- "$e" <<<"$cmds" && pass=$((pass + 1)) || bad "README.md no longer shows '$e': drop it from readme_elsewhere"
done
[ "$nr" -ge 10 ] && pass=$((pass + 1)) || bad "read only $nr commands from README.md"

echo "$pass passed, $fail failed"
[ $fail = 0 ]
