-- args: --ranks 3
-- expect-exit: 1
-- expect: undefined_read.lua:7: chunk 0 on rank 1 holds no value yet in step 0 (read by the copy to rank 2)
-- allgather: rank 1 only holds chunk 1 at the start.
local s = schedule{ collective = "allgather", chunks = nranks }
local st = s:step()
st:copy(1, 2, 0)
return s
