-- args: --ranks 3
-- expect-exit: 1
-- expect: never_written.lua:4: chunk 2 on rank 0 ends with no value (expected rank 2's data); no transfer ever writes it
local s = schedule{ collective = "allgather", chunks = 3 }
for r = 0, 1 do for d = 0, 2 do if d ~= r then s:copy(r, d, r) end end end
return s
