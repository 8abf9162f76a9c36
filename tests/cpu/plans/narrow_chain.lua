-- narrow_chain.lua (tests/cpu/test_shortcuts.c): allreduce, 4 ranks, 1 chunk, where a final version
-- may not travel narrowed (runtime/cpu/widen.c, sc_narrow_plan): r1's final is read by r2's phase A
-- copy (r2's old value is read in the same step), so r1 must carry it in the working buffer, and
-- so must r0, whose final r1 copies (the chain), though r3 copies it too.
local s = schedule{ collective = "allreduce", chunks = 1, name = "narrow_chain" }
local st = s:step()      -- step 0
st:reduce(1, 0, 0)       -- r0 = r0+r1
st = s:step()            -- step 1
st:reduce(2, 0, 0)       -- r0 = (r0+r1)+r2
st = s:step()            -- step 2
st:reduce(3, 0, 0)       -- r0 = ((r0+r1)+r2)+r3, final
st = s:step()            -- step 3
st:copy(0, 1, 0)         -- r1 = r0's final, final (phase B), read by r2 next
st = s:step()            -- step 4
st:copy(1, 2, 0)         -- r2 = r1's final (phase A: r3 reads r2's input now)
st:reduce(2, 3, 0)       -- r3 = r3+r2, not its last
st = s:step()            -- step 5
st:copy(0, 3, 0)         -- r3 = r0's final
return s
