#!/usr/bin/env bash
# demo.sh — the main job: set up and build, then verify the shipped ring for 8 ranks, print the
# proven reduction order of every chunk, and draw the schedule (build/ring8.svg).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
S=build/schedc
echo; echo "\$ schedc check schedules/ring.lua --ranks 8"
$S check schedules/ring.lua --ranks 8
echo; echo "\$ schedc show schedules/ring.lua --ranks 8 --order"
$S show schedules/ring.lua --ranks 8 --order
echo; echo "\$ schedc viz schedules/ring.lua --ranks 8 -o build/ring8.svg"
$S viz schedules/ring.lua --ranks 8 -o build/ring8.svg
echo; echo "\$ schedc check schedules/halving_doubling.lua --ranks 8 -D order=canonical"
$S check schedules/halving_doubling.lua --ranks 8 -D order=canonical
echo; echo "\$ schedc check schedules/ring.lua --ranks 8 -D order=canonical   # refused: a ring is not canonical"
if $S check schedules/ring.lua --ranks 8 -D order=canonical 2>&1 | head -2; then :; fi
