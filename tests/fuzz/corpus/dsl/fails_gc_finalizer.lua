-- args: --ranks 2
-- expect-exit: 1
-- expect: gc_finalizer.lua:5: finalizers (__gc) are not available in schedule files
local t = {}
setmetatable(t, {__gc = function() while true do end end})
return schedule{ collective = "allreduce", chunks = nranks }
