-- args: --ranks 2
-- expect-exit: 1
-- expect: bad_collective.lua:4: bad field 'collective' in schedule{} ('allreduc' is not a collective; choose allreduce, reduce_scatter, allgather, broadcast or reduce)
return schedule{ collective = "allreduc" }
