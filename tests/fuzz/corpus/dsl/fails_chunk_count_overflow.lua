-- args: --ranks 2
-- expect-exit: 1
-- expect: chunk_count_overflow.lua:6: bad argument #4 to 'copy' (chunk count 9223372036854775807 out of range [1, 3] from chunk 1)
local s = schedule{ collective = "allreduce", chunks = 4 }
local st = s:step()
st:copy(0, 1, 1, math.maxinteger)
return s
