-- args: --ranks 2
-- expect-exit: 1
-- expect: require.lua:4: undefined global 'require'
local m = require("os")
return schedule{}
