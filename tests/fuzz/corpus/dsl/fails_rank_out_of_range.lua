-- args: --ranks 8
-- expect-exit: 1
-- expect: rank_out_of_range.lua:7: bad argument #2 to 'reduce' (rank 9 out of range [0, 8))
local s = schedule{ chunks = nranks }
local st = s:step()
st:reduce(0, 1, 0)
st:reduce(0, 9, 0)
return s
