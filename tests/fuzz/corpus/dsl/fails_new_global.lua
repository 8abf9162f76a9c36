-- args: --ranks 2
-- expect-exit: 1
-- expect: new_global.lua:4: assignment to undeclared global 'helper' (schedule files declare variables and functions with 'local')
function helper() end
return schedule{}
