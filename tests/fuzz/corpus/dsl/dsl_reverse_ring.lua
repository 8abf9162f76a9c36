-- args: --ranks 4
-- A ring running the other way (r -> r-1), written from scratch: chunk c starts at rank c-1
-- and travels down; trees print the larger operand first, equal sizes by smaller rank.
-- order: chunk 0: (((r2+r3)+r1)+r0)
-- order: chunk 1: (((r0+r3)+r2)+r1)
-- order: chunk 2: (((r0+r1)+r3)+r2)
-- order: chunk 3: (((r1+r2)+r0)+r3)
-- order@2: chunk 1: (((r0+r3)+r2)+r1)
local n = nranks
local s = schedule{ chunks = n }
for t = 0, n - 2 do
  local st = s:step()
  for r = 0, n - 1 do st:reduce(r, (r - 1) % n, (r + 1 + t) % n) end
end
for t = 0, n - 2 do
  local st = s:step()
  for r = 0, n - 1 do st:copy(r, (r - 1) % n, (r + t) % n) end
end
return s
