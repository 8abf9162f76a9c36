-- args: --ranks 4
-- expect-exit: 1
-- expect: self_send.lua:5: bad argument #2 to 'reduce' (rank 2 cannot reduce to itself)
local s = schedule{}
s:reduce(2, 2, 0)
return s
