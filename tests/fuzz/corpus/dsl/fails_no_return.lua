-- args: --ranks 2
-- expect-exit: 1
-- expect: no_return.lua: a schedule file must end with 'return s', s made by schedule{...} (it returned nil)
local s = schedule{}
