-- args: --ranks 4
-- expect-exit: 1
-- expect: chunk_out_of_range.lua:5: bad argument #3 to 'copy' (chunk 4 out of range [0, 4))
local s = schedule{}
s:copy(0, 1, 4)
return s
