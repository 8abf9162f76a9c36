-- args: --ranks 2
-- expect-exit: 1
-- expect: os_execute.lua:5: undefined global 'os'
-- The sandbox has no os library: nothing runs.
os.execute("touch /tmp/schedc_pwned")
return schedule{}
