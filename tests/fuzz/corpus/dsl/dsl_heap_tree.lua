-- args: --ranks 6
-- A heap-shaped tree written from scratch, unpipelined: level by level up (children of i are
-- 2i+1, 2i+2), then the root's result copied down level by level.
-- Rank 2 receives 5: (r2+r5). Rank 1 receives 3 then 4: ((r1+r3)+r4). Rank 0 receives 1 then 2;
-- trees print the larger operand first.
-- order@0: chunk 0: ((((r1+r3)+r4)+r0)+(r2+r5))
-- order@4: chunk 0: ((((r1+r3)+r4)+r0)+(r2+r5))
local n = nranks
local s = schedule{ chunks = 1 }
local function depth(i) local d = 0; while i > 0 do i = (i - 1) // 2; d = d + 1 end; return d end
local D = depth(n - 1)
for lvl = D, 1, -1 do
  local st = s:step()
  for i = 1, n - 1 do if depth(i) == lvl then st:reduce(i, (i - 1) // 2, 0) end end
end
for lvl = 1, D do
  local st = s:step()
  for i = 1, n - 1 do if depth(i) == lvl then st:copy((i - 1) // 2, i, 0) end end
end
return s
