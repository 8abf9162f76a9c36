-- args: --ranks 2
-- expect-exit: 1
-- expect: typo_global.lua:4: undefined global 'nrank'
local s = schedule{ chunks = nrank }
return s
