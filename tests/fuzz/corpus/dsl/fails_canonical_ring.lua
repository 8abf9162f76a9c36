-- args: --ranks 4 -D order=canonical
-- expect-exit: 1
-- expect: chunk 0 on rank 0 is (((r1+r2)+r3)+r0), but order = "canonical" requires ((r0+r1)+(r2+r3)); rotated chains such as a ring's cannot be canonical
-- The shipped ring, declared canonical, must be refused with the reason.
local s = schedule{ chunks = nranks, order = params.order }
for t = 0, nranks - 2 do
  local st = s:step()
  for r = 0, nranks - 1 do st:reduce(r, (r + 1) % nranks, (r - 1 - t) % nranks) end
end
for t = 0, nranks - 2 do
  local st = s:step()
  for r = 0, nranks - 1 do st:copy(r, (r + 1) % nranks, (r - t) % nranks) end
end
return s
