-- args: --ranks 4
-- expect-exit: 1
-- expect: not_integer.lua:5: bad argument #1 to 'reduce' (rank 1.5 is not an integer)
local s = schedule{}
s:reduce(1.5, 1, 0)
return s
