-- args: --ranks 2
-- expect-exit: 1
-- expect: bad_order.lua:4: bad field 'order' in schedule{} ('sorted'; choose "canonical" or "any")
return schedule{ order = "sorted" }
