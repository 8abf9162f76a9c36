-- args: --ranks 8
-- Recursive doubling allreduce (whole buffer exchanged at distance 1, 2, 4): every rank ends
-- with the balanced tree, whatever side of the exchange it was on (a+b == b+a).
-- order@0: chunk 0: (((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))
-- order@5: chunk 1: (((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))
-- order@7: chunk 0: (((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)))
local s = schedule{ chunks = 2, order = "canonical" }
local d = 1
while d < nranks do
  local st = s:step()
  for r = 0, nranks - 1 do
    st:reduce(r, r ~ d, 0, 2)
  end
  d = d * 2
end
return s
