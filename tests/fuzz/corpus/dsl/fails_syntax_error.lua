-- args: --ranks 2
-- expect-exit: 1
-- expect: syntax_error.lua:6: 'end' expected (to close 'for' at line 5) near <eof>
local s = schedule{}
for i = 1, 2 do
