-- args: --ranks 2
-- The optional 4th argument moves a range of chunks: chunks 1..3 in one call.
-- order: chunk 0: (r0+r1)
-- order: chunk 3: (r0+r1)
local s = schedule{ chunks = 4 }
s:reduce(1, 0, 0, 4)
s:step():copy(0, 1, 0, 1):copy(0, 1, 1, 3)
assert(s.nsteps == 2 and s.chunks == 4 and s.collective == "allreduce")
return s
