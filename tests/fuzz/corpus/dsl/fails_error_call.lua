-- args: --ranks 2
-- expect-exit: 1
-- expect: error_call.lua:5: my schedule needs 4 ranks
-- error() from the script keeps its message and location.
if nranks < 4 then error("my schedule needs 4 ranks") end
