-- ring.lua — the ring: reduce-scatter then allgather around ranks 0 -> 1 -> ... -> n-1 -> 0
-- (in locality order when the topology file places the ranks: topo.ring_order(), docs/topology.md;
-- -D locality=false keeps rank order). Valid for any rank count. Each rank owns a block of k chunks
-- (-D k=K, default 1; K > 1 pipelines smaller pieces). Collectives (-D collective=...): allreduce
-- (default), reduce_scatter, allgather, broadcast and reduce (-D root=R for the last two).
local n = nranks   -- chunk c's tree: the chain from rank c+1, (((r1+r2)+r3)+r0) for chunk 0 of 4 ranks
local k = params.k or 1
local coll = params.collective or "allreduce"
local root = params.root or 0
local dir = params.reverse and -1 or 1          -- -D reverse=true runs the ring the other way
local order, pos = topo.ring_order(), {}                -- rank order unless the file places ranks
for i = 1, n do if params.locality == false then order[i] = i - 1 end pos[order[i]] = i - 1 end
local function nxt(r, hops) return order[(pos[r] + dir * (hops or 1)) % n + 1] end
local s = schedule{ collective = coll, chunks = n * k, name = "ring", root = root, order = params.order }

-- Reduce-scatter: at step t rank r passes its partial of block (r - 1 - t) to the next rank, so
-- after n-1 steps block b is complete on rank b.
local function reduce_scatter()
  for t = 0, n - 2 do
    local st = s:step()
    for r = 0, n - 1 do
      local b = nxt(r, -(1 + t))
      st:reduce(r, nxt(r), b * k, k)
    end
  end
end

-- Allgather: rank b starts with block b; at step t rank r forwards block (r - t).
local function allgather()
  for t = 0, n - 2 do
    local st = s:step()
    for r = 0, n - 1 do
      st:copy(r, nxt(r), nxt(r, -t) * k, k)
    end
  end
end

if coll == "allreduce" then
  reduce_scatter()
  allgather()
elseif coll == "reduce_scatter" then
  reduce_scatter()
elseif coll == "allgather" then
  allgather()
elseif coll == "reduce" then
  -- A chain per chunk ending at the root, pipelined: chunk c starts one step after chunk c-1.
  local C = n * k
  for t = 0, C + n - 3 do
    local st = s:step()
    for c = 0, C - 1 do
      local h = t - c                    -- hop h of chunk c: root+1+h -> root+2+h
      if h >= 0 and h < n - 1 then st:reduce(nxt(root, 1 + h), nxt(root, 2 + h), c) end
    end
  end
elseif coll == "broadcast" then
  -- Pipelined: chunk c leaves the root at step c and moves one rank per step.
  local C = n * k
  for t = 0, C + n - 3 do
    local st = s:step()
    for c = 0, C - 1 do
      local h = t - c
      if h >= 0 and h < n - 1 then st:copy(nxt(root, h), nxt(root, h + 1), c) end
    end
  end
else
  error("ring.lua: unknown collective '" .. coll .. "' (allreduce, reduce_scatter, allgather, reduce, broadcast)")
end
return s
