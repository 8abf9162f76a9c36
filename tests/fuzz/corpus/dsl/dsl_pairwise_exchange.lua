-- args: --ranks 2
-- A pairwise exchange in one step: each rank reads the other's value from before the step.
-- order@0: chunk 0: (r0+r1)
-- order@1: chunk 0: (r0+r1)
local s = schedule{ chunks = 1 }
s:reduce(0, 1, 0)
s:reduce(1, 0, 0)
return s
