#!/usr/bin/env bash
# verify_shipped.sh SCHEDC SCHEDULES_DIR NAME [quick] — verifies the shipped schedule NAME.lua for
# every collective it supports, at 1..17 ranks and at 64, 256 and 1024 ranks (one and several
# nodes; at 1024 the flat schedules' allreduce and hierarchical in one layout per collective), and
# checks that the combinations it does not support are refused with a message saying why. quick
# (the ASan tree): not at 1024 ranks, whose verifications take most of the time there and run the
# same code as 256 (the release tree runs them).
set -u
schedc=$1; sdir=$2; name=$3
fails=0; runs=0
check() {  # expect(ok|fail) args...
  local expect=$1; shift
  runs=$((runs + 1))
  out=$("$schedc" check "$sdir/$name.lua" "$@" 2>&1); rc=$?
  if [ "$expect" = ok ] && [ $rc != 0 ]; then echo "FAIL: $name $*: $out"; fails=$((fails + 1)); fi
  if [ "$expect" != ok ]; then
    if [ $rc != 1 ] || ! grep -qF -- "$expect" <<<"$out"; then echo "FAIL: $name $* should be refused with '$expect': $out"; fails=$((fails + 1)); fi
  fi
}
ispow2() { [ $(($1 & ($1 - 1))) = 0 ]; }
canon() {  # args...: verifies and is proven canonical
  runs=$((runs + 1))
  out=$("$schedc" check "$sdir/$name.lua" -D order=canonical "$@" 2>&1); rc=$?
  if [ $rc != 0 ] || ! grep -q 'canonical order' <<<"$out"; then echo "FAIL: $name $* not proven canonical: $out"; fails=$((fails + 1)); fi
}
ranks="$(seq 1 17) 64 256 1024"
[ "${4:-}" = quick ] && ranks="$(seq 1 17) 64 256"
case $name in
  ring)   colls="allreduce reduce_scatter allgather reduce broadcast";;
  direct) colls="allreduce reduce_scatter allgather reduce broadcast";;
  tree)   colls="allreduce reduce broadcast";;
  halving_doubling) colls="allreduce reduce_scatter allgather";;
  hierarchical) colls="allreduce reduce_scatter allgather";;
esac
for n in $ranks; do
  for c in $colls; do
    extra=()
    [ "$c" = reduce ] || [ "$c" = broadcast ] && extra=(-D root=$((n / 2)))
    if [ $name = halving_doubling ] && [ $c != allreduce ] && ! ispow2 $n; then
      check "needs a power-of-two rank count (got $n" --ranks $n -D collective=$c; continue
    fi
    # at 1024 ranks the flat schedules verify allreduce only (a third to a half of each test's time;
    # the other collectives run the same verifier at 256)
    if [ $name != hierarchical ] && [ $n = 1024 ] && [ $c != allreduce ]; then continue; fi
    if [ $name = hierarchical ] && [ $n = 1024 ]; then
      # at 1024 ranks one layout per collective (38 s for all four, 9 s so): one node for allreduce,
      # 8 for reduce_scatter, 2 for allgather; every layout at every count up to 256
      case $c in allreduce) check ok --ranks $n -D collective=$c;; reduce_scatter) check ok --ranks $n --nodes 8 -D collective=$c;;
                 *) check ok --ranks $n --nodes 2 -D collective=$c;; esac
      continue
    fi
    check ok --ranks $n -D collective=$c "${extra[@]}"
    case $name in
      tree) check ok --ranks $n -D collective=$c -D shape=binomial -D chunks=3 "${extra[@]}";;
      ring) [ $n -le 17 ] && check ok --ranks $n -D collective=$c -D k=2 -D reverse=true "${extra[@]}";;
      hierarchical) for m in 2 4 8; do [ $((n % m)) = 0 ] && [ $n -ge $m ] && check ok --ranks $n --nodes $m -D collective=$c; done;;
    esac
    # canonical forms: direct (reductions, any count; the n^2-transfer 1024 is covered above),
    # hierarchical on aligned power-of-two nodes
    if [ $name = direct ] && [ $c != allgather ] && [ $c != broadcast ] && [ $n -le 256 ]; then canon --ranks $n -D collective=$c "${extra[@]}"; fi
    if [ $name = hierarchical ] && [ $c != allgather ] && [ $n -le 256 ]; then
      for m in 1 2 4; do [ $((n % m)) = 0 ] && ispow2 $((n / m)) && canon --ranks $n --nodes $m -D collective=$c; done
    fi
  done
done
case $name in
  tree) check "tree.lua supports allreduce, reduce and broadcast, not 'allgather'" --ranks 4 -D collective=allgather;;
  hierarchical) check "node 1 has 1 ranks but node 0 has 2" --topology "$(dirname "$0")/dsl/uneven.topo"
    check "order=canonical needs aligned node blocks" --ranks 6 --nodes 2 -D order=canonical;;
esac
echo "$runs runs, $fails failed"
[ $fails = 0 ] && echo "$runs passed, 0 failed"
[ $fails = 0 ]
