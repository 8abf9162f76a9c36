-- direct.lua — every rank reduces its own block straight from all peers, then sends it to all:
-- 2 steps on a switched fabric (all-to-all), the same bytes per rank as a ring.
-- Block b (chunks b*k .. b*k+k-1, -D k=K, default 1) is owned by rank b, which sums it as
-- (((own + r0) + r1) + ...) over the other ranks in rank order. Valid for any rank count.
-- Collectives (-D collective=...): allreduce (default), reduce_scatter, allgather, broadcast and
-- reduce (-D root=R; the root sums every chunk from the peers in rank order).
-- -D order=canonical: the reduction of each block follows the canonical tree over ranks 0..n-1
-- (left subtree: the largest power of two below the count; docs/determinism.md) instead of
-- the owner's rank-order chain: every pair, quad, ... is summed by one of its members and sent
-- on, so the owner gets the block after ceil(log2 n) steps instead of 1; the gather stays one
-- direct step. Every rank count; allreduce, reduce_scatter and reduce.
local n = nranks
local k = params.k or 1
local coll = params.collective or "allreduce"
local root = params.root or 0
local s = schedule{ collective = coll, chunks = n * k, root = root, name = "direct", order = params.order }

-- Canonical tree of ranks [lo, lo+cnt) summed into rank `want` (a member): returns its height.
-- The subtree that holds `want` sums into it; the other sums into its member lo' + owner mod cnt'
-- (spreading the partial sums of different blocks over different ranks), then sends it to want.
local steps = {}
local function step_at(i)
  while #steps <= i do steps[#steps + 1] = s:step() end
  return steps[i + 1]
end
local function canon(lo, cnt, want, owner, chunk, kk)
  if cnt == 1 then return 0 end
  local l = 1
  while l * 2 < cnt do l = l * 2 end
  local in_left = want < lo + l
  local lw = in_left and want or lo + owner % l
  local rw = in_left and (lo + l + owner % (cnt - l)) or want
  local h = math.max(canon(lo, l, lw, owner, chunk, kk), canon(lo + l, cnt - l, rw, owner, chunk, kk))
  if in_left then step_at(h):reduce(rw, want, chunk, kk) else step_at(h):reduce(lw, want, chunk, kk) end
  return h + 1
end

local function reduce_blocks()
  if params.order == "canonical" then
    for owner = 0, n - 1 do canon(0, n, owner, owner, owner * k, k) end
    return
  end
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
elseif coll == "reduce" and params.order == "canonical" then
  canon(0, n, root, root, 0, n * k)
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
