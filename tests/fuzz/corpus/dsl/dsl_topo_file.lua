-- args: --topology two_nodes.topo -D extra=7 -D tag=x
-- A topology file (ranks interleaved across 2 nodes) and -D params (numbers converted).
-- order: chunk 0: ((r0+r2)+(r1+r3))
assert(nranks == 4 and topo.nnodes == 2)
assert(topo.ranks_on(0)[1] == 0 and topo.ranks_on(0)[2] == 2 and topo.node_of(3) == 1)
assert(params.extra == 7 and params.tag == "x" and params.missing == nil)
local s = schedule{ chunks = 1 }
s:step():reduce(2, 0, 0):reduce(3, 1, 0)
s:step():reduce(1, 0, 0)
s:step():copy(0, 1, 0):copy(0, 2, 0):copy(0, 3, 0)
return s
