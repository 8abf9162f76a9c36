-- direct.lua — every rank reduces its own block straight from all peers, then sends it to all:
-- 2 steps on a switched fabric (all-to-all), the same bytes per rank as a ring.
-- Block b (chunks b*k .. b*k+k-1, -D k=K, default 1) is owned by rank b, which sums it as
-- (((own + r0) + r1) + ...) over the other ranks in rank order. Valid for any rank count.
-- Collectives (-D collective=...): allreduce (default), reduce_scatter, allgather, broadcast and
-- reduce (-D root=R; the root sums every chunk from the peers in rank order).
local n = nranks
local k = params.k or 1
local coll = params.collective or "allreduce"
local root = params.root or 0
local s = schedule{ collective = coll, chunks = n * k, root = root, name = "direct", order = params.order }

local function reduce_blocks()
  local st = s:step()
  for owner = 0, n - 1 do
    for r = 0, n - 1 do
      if r ~= owner then st:reduce(r, owner, owner * k, k) end
    end
  end
end

local function gather_blocks()
  local st = s:step()
  for owner = 0, n - 1 do
    for r = 0, n - 1 do
      if r ~= owner then st:copy(owner, r, owner * k, k) end
    end
  end
end

if coll == "allreduce" then
  reduce_blocks(); gather_blocks()
elseif coll == "reduce_scatter" then
  reduce_blocks()
elseif coll == "allgather" then
  gather_blocks()
elseif coll == "reduce" then
  local st = s:step()
  for r = 0, n - 1 do if r ~= root then st:reduce(r, root, 0, n * k) end end
elseif coll == "broadcast" then
  local st = s:step()
  for r = 0, n - 1 do if r ~= root then st:copy(root, r, 0, n * k) end end
else
  error("direct.lua: unknown collective '" .. coll .. "' (allreduce, reduce_scatter, allgather, reduce, broadcast)")
end
return s
