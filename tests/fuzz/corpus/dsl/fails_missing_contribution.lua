-- args: --ranks 4
-- expect-exit: 1
-- expect: missing_contribution.lua:9: chunk 0 on rank 0 misses the contribution of rank 2
-- A direct allreduce whose owners forget rank 2.
local s = schedule{ collective = "allreduce", chunks = nranks }
local st = s:step()
for c = 0, nranks - 1 do
  for r = 0, nranks - 1 do
    if r ~= c and r ~= 2 then st:reduce(r, c, c) end
  end
end
st = s:step()
for c = 0, nranks - 1 do
  for r = 0, nranks - 1 do if r ~= c then st:copy(c, r, c) end end
end
return s
