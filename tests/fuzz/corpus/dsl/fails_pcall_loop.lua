-- args: --ranks 2
-- expect-exit: 1
-- expect: pcall_loop.lua:5: 
-- expect: exceeded (an endless loop?
while true do pcall(function() while true do end end) end
