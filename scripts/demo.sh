#!/usr/bin/env bash
# demo.sh — the main job: set up and build, then verify the shipped ring for 8 ranks, print the
# proven reduction order of every chunk, draw the schedule (build/ring8.svg), and run it on CPU
# ranks — threads, then processes — showing every rank ends with the same bits.
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
echo; echo "\$ schedc run schedules/ring.lua --ranks 4 --check"
$S run schedules/ring.lua --ranks 4 --check
echo; echo "\$ schedc run schedules/ring.lua --ranks 4 --backend shm --iters 5   # same digest, as processes"
$S run schedules/ring.lua --ranks 4 --backend shm --iters 5
