-- args: --ranks 2
-- expect-exit: 1
-- expect: load_string.lua:4: undefined global 'load'
local f = load("return os")
return schedule{}
