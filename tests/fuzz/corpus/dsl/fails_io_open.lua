-- args: --ranks 2
-- expect-exit: 1
-- expect: io_open.lua:4: undefined global 'io'
local f = io.open("/etc/passwd")
return schedule{}
