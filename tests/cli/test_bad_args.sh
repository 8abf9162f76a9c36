#!/usr/bin/env bash
# test_bad_args.sh SCHEDC SCHEDULES_DIR — every subcommand refuses a malformed number (and an
# unknown option, a missing value) before it does anything: exit 2, one line on stderr naming the
# command, the option and the value ("schedc bench: --ranks '5x' is not a rank count ..."),
# nothing on stdout (no rank ran, no table), no file written, no process launched. The table
# below is every numeric option of every subcommand; each is tried with every bad value after
# FILE, and with two of them before FILE and as --opt=V.
# Before getopt_long (issue 29), bench read --ranks/--nodes/--iters/--warmup with atoi:
# `schedc bench --ranks 5x` ran 5 ranks and exited 0.
set -u
S=$(realpath "$1"); D=$(realpath "$2")
R=$D/ring.lua
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
W=$tmp/w; mkdir "$W"; cd "$W" || exit 1  # the commands' working folder: must stay empty
pass=0; fail=0
bad() { echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2"; fail=$((fail + 1)); }

# refused CMD PATTERN ARGS...: exit 2 within 10 s, stderr one line starting "schedc CMD: " and
# containing PATTERN, stdout empty, nothing created in the (otherwise empty) working folder
refused() {
  local cmd=$1 pat=$2; shift 2
  rm -rf "${W:?}"/* 2>/dev/null
  timeout 10 "$S" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local out err made; out=$(cat "$tmp/out"); err=$(cat "$tmp/err"); made=$(ls -A "$W")
  local what="$* -> rc $rc; stdout: ${out:0:300}; stderr: ${err:0:300}"
  if [ "$rc" != 2 ]; then bad "exit $rc (want 2): $*" "$what"
  elif [ -n "$out" ]; then bad "printed on stdout (something ran): $*" "$what"
  elif [ "$(wc -l <<<"$err")" != 1 ] || [ "${err#"schedc $cmd: "}" = "$err" ]; then bad "not one 'schedc $cmd: ' line: $*" "$what"
  elif ! grep -qF -- "$pat" <<<"$err"; then bad "missing \"$pat\": $*" "$what"
  elif [ -n "$made" ]; then bad "created $made: $*" "$what"
  else pass=$((pass + 1)); fi
}

# cmd | option | the other arguments (FILE first; the bad option goes after, then before it)
table="
check     --ranks   $R
check     --nodes   $R --ranks 4
show      --ranks   $R --order
show      --rank    $R --ranks 4 --order
compile   --ranks   $R -o out.plan
compile   --nodes   $R --ranks 4 -o out.plan
viz       --ranks   $R -o out.svg
emit-cuda --ranks   $R -o outdir
run       --ranks   $R --count 16
run       --nodes   $R --ranks 4 --count 16
run       --count   $R --ranks 2
run       --slice   $R --ranks 2 --count 16
run       --iters   $R --ranks 2 --count 16
run       --seed    $R --ranks 2 --count 16
run       --timeout $R --ranks 2 --count 16
bench     --ranks   $R --sizes 8 --iters 1 --warmup 0
bench     --nodes   $R --ranks 4 --sizes 8 --iters 1 --warmup 0
bench     --iters   $R --ranks 2 --sizes 8 --warmup 0
bench     --warmup  $R --ranks 2 --sizes 8 --iters 1
bench     --min     $R --ranks 2 --iters 1 --warmup 0
bench     --max     $R --ranks 2 --iters 1 --warmup 0
bench     --factor  $R --ranks 2 --min 8 --max 64 --iters 1 --warmup 0
bench     --sizes   $R --ranks 2 --iters 1 --warmup 0
cost      --ranks   $R --topology $D/topologies/dgx_h100.lua
cost      --nodes   $R --topology $D/topologies/dgx_h100.lua
cost      --sizes   $R --topology $D/topologies/dgx_h100.lua
tune      --ranks   --sizes 8 -o tuned --schedules $D
tune      --keep    --ranks 2 --sizes 8 -o tuned --schedules $D
tune      --margin  --ranks 2 --sizes 8 -o tuned --schedules $D
tune      --sizes   --ranks 2 -o tuned --schedules $D
tune      --iters   --ranks 2 --sizes 8 -o tuned --schedules $D
launch    -n        --grace 1 -- touch launched
launch    --grace   -n 2 -- touch launched
launch    --master-port --hosts a:1 --rsh false -- touch launched
"
values=(5x '' -1 99999999999999999999 abc ' 5' +5 0x10)
rows=0
while read -r cmd opt rest; do
  [ -z "$cmd" ] && continue
  rows=$((rows + 1))
  read -ra more <<<"$rest"
  for v in "${values[@]}"; do
    if [ "$opt" = --sizes ]; then pat="$opt '$v': bad size"; else pat="$opt '$v' is not"; fi
    case $cmd in
    launch) # the options end at --: the bad one goes first
      refused "$cmd" "$pat" "$cmd" "$opt" "$v" "${more[@]}" ;;
    *)
      refused "$cmd" "$pat" "$cmd" "${more[@]}" "$opt" "$v"
      case $v in 5x|'') # the other spellings: before FILE, --opt=V
        refused "$cmd" "$pat" "$cmd" "$opt" "$v" "${more[@]}"
        [ "${opt:0:2}" = -- ] && refused "$cmd" "$pat" "$cmd" "${more[@]}" "$opt=$v" ;;
      esac ;;
    esac
  done
done <<<"$table"
[ "$rows" = 34 ] || bad "the table has $rows rows (34 expected): it was not read"

# a bad item inside a list, too many sizes
refused bench "--sizes '8,4x': bad size '4x'" bench --ranks 2 --sizes 8,4x
refused bench "--sizes '8,,64': bad size ''" bench --ranks 2 --sizes 8,,64
refused cost "more than 64 sizes" cost "$R" --topology "$D/topologies/dgx_h100.lua" --sizes "$(seq -s, 1 65)"
# -D without key=value, in every command that takes it
for cmd in check run bench cost; do
  refused $cmd "-D 'novalue': expected key=value" $cmd "$R" --ranks 2 -D novalue --topology "$D/topologies/dgx_h100.lua"
done
# unknown options, a missing value, a value given to a flag, an ambiguous abbreviation, an
# option of another command; every subcommand
for cmd in check show compile viz emit-cuda run bench cost tune launch check-op; do
  refused $cmd "unknown option '--bogus'" $cmd --bogus "$R"
  refused $cmd "unknown option '-Q'" $cmd -Q "$R"
done
for cmd in check show compile viz emit-cuda run bench cost tune; do
  refused $cmd "option --ranks needs a value" $cmd --ranks
done
refused launch "option -n needs a value" launch -n
refused run "option --check takes no value ('--check=yes')" run "$R" --ranks 2 --check=yes
refused run "option '--c' is ambiguous" run "$R" --ranks 2 --c
refused check "unknown option '--count'" check "$R" --ranks 2 --count 16
refused run "unexpected argument 'x.lua'" run "$R" x.lua --ranks 2
refused launch "unexpected 'touch'" launch -n 2 touch launched
# launch --hosts (issue 36): the host list, the ways to reach a host, the rank placement
for h in '' 'a:' 'a:0' 'a:x' 'a:2K' ':2' '-oProxyCommand=x:1' 'a b:1' "a;touch launched" 'a,,b' 'a:1,' 'a:99999'; do
  refused launch "--hosts '$h': " launch --hosts "$h" --rsh false -- touch launched
done
refused launch "host 'a' is given twice" launch --hosts a:1,b:1,a:2 --rsh false -- touch launched
refused launch "-n 4 ranks do not fit in the 3 slots of --hosts 'a:2,b'" launch --hosts a:2,b -n 4 --rsh false -- touch launched
refused launch "--map-by 'core' is not slot or node" launch --hosts a:2 --map-by core -- touch launched
refused launch "--rsh and --host-cmd are two ways" launch --hosts a:2 --rsh ssh --host-cmd 'ip netns exec %h' -- touch launched
refused launch "--host-cmd ' ' is not a command" launch --hosts a:2 --host-cmd ' ' -- touch launched
refused launch "-x 'FOO' is not NAME=VALUE" launch --hosts a:2 -x FOO -- touch launched
refused launch "-x '1A=b' is not NAME=VALUE" launch --hosts a:2 -x 1A=b -- touch launched
refused launch "--master-addr 'a b' is not" launch --hosts a:2 --master-addr 'a b' -- touch launched
for o in "--map-by node" "--rsh ssh" "--host-cmd x" "--master-addr a" "--master-port 5" "-x A=b"; do
  # shellcheck disable=SC2086
  refused launch "${o%% *} is for --hosts" launch -n 2 $o -- touch launched
done
refused launch "need -- CMD" launch --hosts a:2
# choices
refused run "--verify 'most' (choose none, digest, checksum, full or exact)" run "$R" --ranks 2 --verify most
refused bench "--collective 'allsum'" bench --ranks 2 --collective allsum
refused run "unknown dtype" run "$R" --ranks 2 --dtype f8

echo "$pass passed, $fail failed"
[ $fail = 0 ]
