-- halving_doubling.lua — Rabenseifner: reduce-scatter by recursive halving, then allgather by
-- recursive doubling; log2(n) steps each, the same bytes per rank as a ring.
-- In halving step j (distance 2^j, ascending) rank r exchanges with r xor 2^j and keeps the
-- chunks whose bit j matches its own, so chunk c ends on rank c and its tree is the canonical
-- balanced tree over ranks ((r0+r1)+(r2+r3)) ... (-D order=canonical verifies it).
-- Rank counts that are not powers of two (allreduce only): the p = 2^floor(log2 n) core runs
-- the algorithm after ranks p..n-1 fold into ranks 0..n-p-1 (one step before, one copy after);
-- the result is then valid but not canonical. reduce_scatter and allgather need a power of two.
-- -D k=K gives K chunks per block (default 1).
local n = nranks
local k = params.k or 1
local coll = params.collective or "allreduce"
local p = 1
while p * 2 <= n do p = p * 2 end
if coll ~= "allreduce" and p ~= n then
  error(string.format("halving_doubling.lua: %s needs a power-of-two rank count (got %d; use ring.lua)", coll, n))
end
if coll ~= "allreduce" and coll ~= "reduce_scatter" and coll ~= "allgather" then
  error("halving_doubling.lua supports allreduce, reduce_scatter and allgather, not '" .. coll .. "'")
end
local s = schedule{ collective = coll, chunks = p * k, name = "halving_doubling", order = params.order }

-- Blocks are indexed 0..p-1 (block b = chunks b*k .. b*k+k-1). send(st, kind, from, to, base,
-- stride) moves the blocks base, base + stride, base + 2*stride, ... below p.
local function send(st, kind, from, to, base, stride)
  for b = base, p - 1, stride do st[kind](st, from, to, b * k, k) end
end

local function halving()
  local d = 1
  while d < p do
    local st = s:step()
    for r = 0, p - 1 do
      -- r holds the blocks b with b mod 2d == r mod d (mod d); it keeps those agreeing with r in
      -- bit d and sends the partner's: b mod 2d == partner mod 2d
      local partner = r ~ d
      send(st, "reduce", r, partner, partner & (2 * d - 1), 2 * d)
    end
    d = d * 2
  end
end

local function doubling()
  local d = p // 2
  while d >= 1 do
    local st = s:step()
    for r = 0, p - 1 do
      -- r holds the blocks with b mod 2d == r mod 2d; the partner needs them all
      send(st, "copy", r, r ~ d, r & (2 * d - 1), 2 * d)
    end
    d = d // 2
  end
end

if coll == "allreduce" then
  if p < n then
    local st = s:step()
    for e = p, n - 1 do st:reduce(e, e - p, 0, p * k) end
  end
  halving(); doubling()
  if p < n then
    local st = s:step()
    for e = p, n - 1 do st:copy(e - p, e, 0, p * k) end
  end
elseif coll == "reduce_scatter" then
  halving()
else
  doubling()
end
return s
