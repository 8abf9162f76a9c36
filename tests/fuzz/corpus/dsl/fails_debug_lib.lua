-- args: --ranks 2
-- expect-exit: 1
-- expect: debug_lib.lua:4: undefined global 'debug'
debug.sethook()
return schedule{}
