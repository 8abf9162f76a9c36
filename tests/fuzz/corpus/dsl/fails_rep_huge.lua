-- args: --ranks 2
-- expect-exit: 1
-- expect: rep_huge.lua:5: bad argument #1 to 'rep' (string.rep result over 16 MiB)
local n = 0
while true do local s = ("x"):rep(4e8); n = n + #s end
