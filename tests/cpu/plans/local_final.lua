-- local_final.lua (tests/cpu/test_shortcuts.c): allreduce, 3 ranks, 1 chunk, where rank 1's final
-- value is a reduce no peer reads (written straight into the receive buffer in phase B: the
-- executor hashes it there for the digest), rank 0's a phase A/C reduce others copy.
local s = schedule{ collective = "allreduce", chunks = 1, name = "local_final" }
local st = s:step()      -- step 0
st:reduce(1, 0, 0)       -- r0 = r0+r1
st = s:step()            -- step 1
st:reduce(2, 0, 0)       -- r0 = (r0+r1)+r2, final, read by r2 in step 3
st:copy(0, 1, 0)         -- r1 = r0+r1 (before step 1's write)
st = s:step()            -- step 2
st:reduce(2, 1, 0)       -- r1 = (r0+r1)+r2, final, unread
st = s:step()            -- step 3
st:copy(0, 2, 0)         -- r2 = r0's final
return s
