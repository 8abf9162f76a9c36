-- tree.lua — reduce up a tree, then broadcast down it, pipelined by chunks: chunk c moves one
-- level per step, one step behind chunk c-1. Valid for any rank count.
--   -D shape=binary   (default) heap-shaped binary tree: node i's children are 2i+1 and 2i+2;
--                     a parent receiving two children in one step computes (own + first) + second.
--   -D shape=binomial binomial tree: in round j rank r (r mod 2^(j+1) == 2^j) sends to r - 2^j.
--                     Its sums are the canonical balanced tree over ranks (-D order=canonical).
--   -D chunks=C       pipeline depth (default 8)
--   -D collective=    allreduce (default), reduce, broadcast; -D root=R for the last two.
local n = nranks
local C = params.chunks or 8
local coll = params.collective or "allreduce"
local shape = params.shape or "binary"
local root = params.root or 0
if coll ~= "allreduce" and coll ~= "reduce" and coll ~= "broadcast" then
  error("tree.lua supports allreduce, reduce and broadcast, not '" .. coll .. "' (use ring.lua or direct.lua)")
end
if shape ~= "binary" and shape ~= "binomial" then
  error("tree.lua: shape must be 'binary' or 'binomial', not '" .. tostring(shape) .. "'")
end
local s = schedule{ collective = coll, chunks = C, root = root, name = "tree-" .. shape,
                    order = params.order }

-- Tree edges as {child, parent, level}: data moves up at level `level` (1 = first to move).
local edges, levels = {}, 0
if shape == "binary" then
  -- Positions i relabel ranks so the tree's root is `root`: rank = (i + root) mod n.
  local function depth(i) local d = 0; while i > 0 do i = (i - 1) // 2; d = d + 1 end; return d end
  levels = depth(n - 1)
  for i = 1, n - 1 do
    edges[#edges + 1] = { (i + root) % n, ((i - 1) // 2 + root) % n, levels - depth(i) + 1 }
  end
else
  -- Rooted at rank 0 for reductions (keeps the canonical shape); relabelled for a broadcast.
  local base = coll == "broadcast" and root or 0
  local d, j = 1, 1
  while d < n do
    for r = d, n - 1, 2 * d do edges[#edges + 1] = { (r + base) % n, (r - d + base) % n, j } end
    d, j = d * 2, j + 1
  end
  levels = j - 1
end
-- Up moves in ascending child order within a level, so (own + first) + second is fixed.
table.sort(edges, function(a, b)
  if a[3] ~= b[3] then return a[3] < b[3] end
  return ((a[1] - root) % n) < ((b[1] - root) % n)
end)

local function up()
  for t = 0, C + levels - 2 do
    local st = s:step()
    for _, e in ipairs(edges) do
      local c = t - (e[3] - 1)
      if c >= 0 and c < C then st:reduce(e[1], e[2], c) end
    end
  end
end

local function down()
  for t = 0, C + levels - 2 do
    local st = s:step()
    for _, e in ipairs(edges) do
      local c = t - (levels - e[3])  -- the last level up is the first down
      if c >= 0 and c < C then st:copy(e[2], e[1], c) end
    end
  end
end

if coll == "allreduce" then
  up(); down()
elseif coll == "reduce" then
  up()
  -- The binomial tree sums at rank 0; hand the result to another root in one more step.
  if shape == "binomial" and root ~= 0 then s:step(); s:copy(0, root, 0, C) end
else
  down()
end
return s
