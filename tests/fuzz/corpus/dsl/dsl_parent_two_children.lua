-- args: --ranks 3
-- A tree parent receiving two children in one step computes (own + first) + second, in the
-- order written: here first rank 2, then rank 1.
-- order: chunk 0: ((r0+r2)+r1)
local s = schedule{ chunks = 1, collective = "reduce" }
local st = s:step()
st:reduce(2, 0, 0)
st:reduce(1, 0, 0)
return s
