-- args: --ranks 4
-- expect-exit: 1
-- expect: assoc_differs.lua:10: chunk 0: rank 3 ends with (((r0+r3)+r1)+r2) but rank 0 with (((r0+r1)+r2)+r3)
-- Every rank gets every contribution once, but ranks 0 and 3 associate differently:
-- they would end with different bits.
local s = schedule{ chunks = 1 }
local st = s:step()
st:reduce(1, 0, 0); st:reduce(2, 0, 0); st:reduce(3, 0, 0)
st:reduce(0, 3, 0); st:reduce(1, 3, 0)
st:reduce(2, 3, 0)
st = s:step()
st:copy(0, 1, 0); st:copy(0, 2, 0)
return s
