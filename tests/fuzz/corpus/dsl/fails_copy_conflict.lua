-- args: --ranks 3
-- expect-exit: 1
-- expect: copy_conflict.lua:7: chunk 0 on rank 2 receives a copy and another write in step 0
local s = schedule{ collective = "broadcast", chunks = 1 }
local st = s:step()
st:copy(0, 2, 0)
st:copy(0, 2, 0)
return s
