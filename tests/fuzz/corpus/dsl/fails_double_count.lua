-- args: --ranks 3
-- expect-exit: 1
-- expect: double_count.lua:8: chunk 0 on rank 0 counts rank 1 twice
local s = schedule{ chunks = 1, collective = "reduce" }
s:step()
s:reduce(1, 0, 0)
s:reduce(2, 0, 0)
s:step(); s:reduce(1, 0, 0)      -- rank 1's value a second time
return s
