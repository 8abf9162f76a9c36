-- args: --ranks 2
-- expect-exit: 1
-- expect: unknown_field.lua:4: unknown field 'chunk' in schedule{} (fields: collective, chunks, name, root, order)
return schedule{ chunk = 2 }
