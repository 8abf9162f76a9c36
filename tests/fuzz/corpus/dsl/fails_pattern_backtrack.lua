-- args: --ranks 2
-- expect-exit: 1
-- expect: pattern_backtrack.lua:6: Lua patterns (string.match, gmatch, gsub, find without plain) are not available
local s = ("a"):rep(5000)
local plain = s:find("aa", 1, true) -- plain find stays
return s:find(".-.-.-.-.-b")
