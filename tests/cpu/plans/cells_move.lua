-- cells_move.lua (tests/cpu/test_shortcuts.c): allreduce, 3 ranks, 3 chunks, own cells whose values move
-- send buffer -> receive buffer -> working buffer -> receive buffer, through phase A/C and unread results.
local s = schedule{ collective = params.collective or "allreduce", chunks = 3, name = "cells_move", root = params.root or 0 }
local st = s:step()                 -- step 0
st:reduce(1, 0, 0)                  -- r0.c0 v1 = r0+r1 (nobody reads it: OUT)
st:reduce(0, 1, 1)                  -- r1.c1 v1 = r1+r0 (A/C: r1.c1 v0 is read by r2 now; v1 unread)
st:reduce(1, 2, 1)                  -- r2.c1 v1 = r2+r1
st:reduce(2, 1, 2)                  -- r1.c2 v1 = r1+r2 (read by r0 next)
st = s:step()                       -- step 1
st:reduce(2, 0, 0)                  -- r0.c0 v2 = r0+r1+r2 (read next: W)
st:reduce(0, 2, 1)                  -- r2.c1 v2 final (read next)
st:reduce(1, 0, 2)                  -- r0.c2 v1 final = r0+(r1+r2)
st = s:step()                       -- step 2
st:copy(0, 1, 0)                    -- r1.c0 final (read next by r0)
st:copy(0, 2, 0)
st:copy(2, 0, 1); st:copy(2, 1, 1)  -- r1.c1 v2 final (OUT)
st:copy(0, 1, 2); st:copy(0, 2, 2)
st = s:step()                       -- step 3
st:copy(1, 0, 0)                    -- r0.c0 v3 (OUT)
return s
