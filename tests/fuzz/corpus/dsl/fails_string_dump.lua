-- args: --ranks 2
-- expect-exit: 1
-- expect: string_dump.lua:4: attempt to call a nil value (field 'dump')
local b = string.dump(function() end)
return schedule{}
