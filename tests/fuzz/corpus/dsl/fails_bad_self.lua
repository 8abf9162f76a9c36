-- args: --ranks 4
-- expect-exit: 1
-- expect: bad_self.lua:5: calling 'reduce' on bad self (write s:reduce(...) with a colon, s a schedule)
local s = schedule{}
s.reduce(0, 1, 0)
return s
