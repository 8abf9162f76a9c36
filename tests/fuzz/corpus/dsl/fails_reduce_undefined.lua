-- args: --ranks 2
-- expect-exit: 1
-- expect: reduce_undefined.lua:5: reduce into chunk 0 on rank 1, which holds no value yet in step 0 (use copy)
local s = schedule{ collective = "broadcast", chunks = 1 }
s:reduce(0, 1, 0)
return s
