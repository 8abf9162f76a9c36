-- hierarchical.lua — two-level allreduce for nodes of P ranks each (from `topo`):
--   1. intra-node ring reduce-scatter: local rank j ends with its node's partial of block j;
--   2. inter-node ring allreduce of block j among the ranks with local rank j (one per node);
--   3. intra-node ring allgather of the blocks.
-- Needs the same rank count on every node (say --nodes M or a topology file). With one node it
-- is the plain ring. Block j's chunk for node i is the rank ranks_on(i)[j], so reduce_scatter
-- (-D collective=reduce_scatter) leaves chunk r on rank r; allgather is steps 2-3 reversed.
local M = topo.nnodes
local nodes = {}
for i = 0, M - 1 do nodes[i] = topo.ranks_on(i) end
local P = #nodes[0]
for i = 1, M - 1 do
  if #nodes[i] ~= P then
    error(string.format("hierarchical.lua: node %d has %d ranks but node 0 has %d (needs equal nodes)", i, #nodes[i], P))
  end
end
local coll = params.collective or "allreduce"
if coll ~= "allreduce" and coll ~= "reduce_scatter" and coll ~= "allgather" then
  error("hierarchical.lua supports allreduce, reduce_scatter and allgather, not '" .. coll .. "'")
end
local s = schedule{ collective = coll, chunks = nranks, name = "hierarchical", order = params.order }

local function rank(i, j) return nodes[i][j + 1] end          -- node i, local rank j
local function chunk(j, i) return rank(i, j) end               -- block j, piece i

-- Intra-node ring over blocks: at step t local rank j passes block (j - 1 - t) mod P on.
local function intra(kind)
  for t = 0, P - 2 do
    local st = s:step()
    for i = 0, M - 1 do
      for j = 0, P - 1 do
        local b = kind == "reduce" and (j - 1 - t) % P or (j - t) % P
        for piece = 0, M - 1 do st[kind](st, rank(i, j), rank(i, (j + 1) % P), chunk(b, piece)) end
      end
    end
  end
end

-- Inter-node ring among the ranks with local rank j, over the M pieces of block j.
local function inter(kind)
  for t = 0, M - 2 do
    local st = s:step()
    for j = 0, P - 1 do
      for i = 0, M - 1 do
        local piece = kind == "reduce" and (i - 1 - t) % M or (i - t) % M
        st[kind](st, rank(i, j), rank((i + 1) % M, j), chunk(j, piece))
      end
    end
  end
end

if coll == "allreduce" then
  intra("reduce"); inter("reduce"); inter("copy"); intra("copy")
elseif coll == "reduce_scatter" then
  intra("reduce"); inter("reduce")
else
  inter("copy"); intra("copy")
end
return s
