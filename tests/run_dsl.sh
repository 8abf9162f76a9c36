#!/usr/bin/env bash
# run_dsl.sh SCHEDC FILE — a schedule that must be accepted: `schedc check` with its "-- args:"
# must exit 0, and each "-- order: chunk C: TREE" (the defining rank's tree) and
# "-- order@R: chunk C: TREE" (rank R's tree) must be printed by `schedc show --order`.
# The expected trees are derived by hand in the file from the DSL semantics.
set -u
schedc=$1; file=$2
dir=$(dirname "$file"); base=$(basename "$file")
args=$(sed -n 's/^-- args:\(.*\)$/\1/p' "$file" | head -1)
cd "$dir" || exit 1
ok=1
# shellcheck disable=SC2086
if ! out=$(timeout 60 "$schedc" check "$base" $args 2>&1); then echo "FAIL $base: rejected:"; echo "$out"; exit 1; fi
for spec in $(sed -n 's/^-- order\(@[0-9]*\)\{0,1\}:.*$/x\1/p' "$file" | sort -u); do
  rank=${spec#x}; rank=${rank#@}
  if [ -n "$rank" ]; then pat="^-- order@$rank: "; ra="--rank $rank"; else pat="^-- order: "; ra=""; fi
  # shellcheck disable=SC2086
  got=$("$schedc" show "$base" --order $ra $args 2>&1)
  while IFS= read -r exp; do
    if ! grep -qxF -- "$exp" <<<"$got"; then echo "FAIL $base${rank:+ rank $rank}: expected line: $exp"; ok=0; fi
  done < <(grep "$pat" "$file" | sed "s/$pat//")
  [ $ok = 1 ] || { echo "--- got:"; echo "$got"; }
done
if [ $ok = 1 ]; then echo "ok $base"; else exit 1; fi
