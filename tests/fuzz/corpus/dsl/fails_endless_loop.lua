-- args: --ranks 2
-- expect-exit: 1
-- expect: endless_loop.lua:5: instruction limit of 1000000000 exceeded (an endless loop?)
local i = 0
while true do i = i + 1 end
