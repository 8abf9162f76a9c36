-- args: --ranks 3
-- Step semantics: within a step reads see the value from before the step, so in step 0 rank 2
-- receives rank 1's own x1 (not x0+x1). Step 1 adds rank 0; step 2 copies the result back.
-- order@2: chunk 0: ((r1+r2)+r0)
-- order@0: chunk 0: ((r1+r2)+r0)
-- order@1: chunk 0: ((r1+r2)+r0)
local s = schedule{ chunks = 1 }
local st = s:step()
st:reduce(0, 1, 0)       -- rank 1 becomes x1+x0, but only after the step
st:reduce(1, 2, 0)       -- reads x1
s:step():reduce(0, 2, 0)
s:step():copy(2, 0, 0):copy(2, 1, 0)
return s
