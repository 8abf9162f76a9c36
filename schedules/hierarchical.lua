-- hierarchical.lua — two-level allreduce for nodes of P ranks each (from `topo`):
--   1. intra-node ring reduce-scatter: local rank j ends with its node's partial of block j;
--   2. inter-node ring allreduce of block j among the ranks with local rank j (one per node);
--   3. intra-node ring allgather of the blocks.
-- Needs the same rank count on every node (say --nodes M or a topology file). With one node it
-- is the plain ring. Block j's chunk for node i is the rank ranks_on(i)[j], so reduce_scatter
-- (-D collective=reduce_scatter) leaves chunk r on rank r; allgather is steps 2-3 reversed.
-- -D order=canonical (allreduce, reduce_scatter): needs aligned node blocks — P a power of two
-- and node i holding ranks i*P .. i*P+P-1 — so that every node is a subtree of the canonical
-- tree over ranks (docs/determinism.md). Each chunk is then summed along that tree: pairs, quads,
-- ... inside the node first (intra-node transfers), then node sums pairwise across nodes (one
-- inter-node transfer per chunk and merge), into the chunk's owner; allreduce sends the result
-- back down the same tree (copies), so each chunk crosses node boundaries M-1 times each way.
-- The nodes are the topology's "host" level. When the topology file places the ranks (levels
-- from `schedc topo`), each node's ranks go in locality order (socket, PCIe switch, GPU), so the
-- intra-node ring crosses sockets twice, and local rank j is the same slot on every host: the
-- inter-node rings are rails, each through the NIC nearest to its GPUs (topo.near_nic).
local M = topo.nnodes
local nodes = {}
local byloc = topo.located and params.order ~= "canonical" and topo.groups("host")
for i = 0, M - 1 do nodes[i] = byloc and byloc[i + 1] or topo.ranks_on(i) end
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

if params.order == "canonical" then
  if coll == "allgather" then error("hierarchical.lua: order=canonical is for the reductions (allreduce, reduce_scatter)") end
  local pow2 = P & (P - 1) == 0
  for i = 0, M - 1 do
    for j = 0, P - 1 do
      if not pow2 or nodes[i][j + 1] ~= i * P + j then
        error(string.format("hierarchical.lua: order=canonical needs aligned node blocks (a power-of-two node size P " ..
          "and node i holding ranks i*P..i*P+P-1) so that nodes are subtrees of the canonical tree; got %d ranks " ..
          "per node%s (use direct.lua or halving_doubling.lua with -D order=canonical)", P,
          pow2 and string.format(", rank %d on node %d", nodes[i][j + 1], i) or ""))
      end
    end
  end
  -- The canonical tree of ranks [lo, lo+cnt) summed into member `want`; the subtree without
  -- `want` sums into its member lo' + c mod cnt' (spreading partial sums over ranks) and sends
  -- it. Each merge is recorded (height, from, to) so the result can go back down the tree.
  local merges = {}
  local function canon(lo, cnt, want, c)
    if cnt == 1 then return 0 end
    local l = 1
    while l * 2 < cnt do l = l * 2 end
    local in_left = want < lo + l
    local lw = in_left and want or lo + c % l
    local rw = in_left and (lo + l + c % (cnt - l)) or want
    local h = math.max(canon(lo, l, lw, c), canon(lo + l, cnt - l, rw, c))
    merges[#merges + 1] = {h, in_left and rw or lw, want, c}
    return h + 1
  end
  local height = 0
  for c = 0, nranks - 1 do height = math.max(height, canon(0, nranks, c, c)) end
  local steps = {}
  for h = 0, height - 1 do steps[h] = s:step() end
  for _, m in ipairs(merges) do steps[m[1]]:reduce(m[2], m[3], m[4]) end
  if coll == "allreduce" then -- back down: the last merge is undone first
    local down = {}
    for h = height - 1, 0, -1 do down[h] = s:step() end
    for _, m in ipairs(merges) do down[m[1]]:copy(m[3], m[2], m[4]) end
  end
  return s
end

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
