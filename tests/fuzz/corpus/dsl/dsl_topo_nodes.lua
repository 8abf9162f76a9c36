-- args: --ranks 6 --nodes 3
-- `topo` with --nodes: 3 nodes of 2 consecutive ranks. Each node's first rank gathers its node
-- (r0+r1), (r2+r3), (r4+r5); node leaders then combine into rank 0, which sends it to all.
-- order: chunk 0: (((r0+r1)+(r2+r3))+(r4+r5))
local s = schedule{ chunks = 1, order = "canonical" }
assert(topo.nnodes == 3 and topo.nranks == 6 and topo.node_of(5) == 2 and topo.local_rank(5) == 1)
local st = s:step()
for nd = 0, topo.nnodes - 1 do
  local rs = topo.ranks_on(nd)
  st:reduce(rs[2], rs[1], 0)
end
s:step():reduce(2, 0, 0)
s:step():reduce(4, 0, 0)
local last = s:step()
for r = 1, nranks - 1 do last:copy(0, r, 0) end
return s
