-- args: --ranks 4
-- expect-exit: 1
-- expect: rs_chunks.lua:4: bad field 'chunks' in schedule{} (reduce_scatter needs a multiple of nranks = 4, got 6)
return schedule{ collective = "reduce_scatter", chunks = 6 }
