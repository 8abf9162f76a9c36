-- args: --ranks 2
-- expect-exit: 1
-- expect: dofile.lua:4: undefined global 'dofile'
dofile("/etc/passwd")
return schedule{}
