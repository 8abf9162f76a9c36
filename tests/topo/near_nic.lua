-- near_nic.lua — run with the fused two-host dump (fused_2host.xml): two hosts of four GPUs,
-- GPUs 0-1 of each host nearest mlx5_0, 2-3 nearest mlx5_1; the host level is the nodes.
assert(topo.located and topo.nnodes == 2 and nranks == 8)
for r = 0, 7 do
  assert(topo.node_of(r) == r // 4 and topo.group_of(r, "host") == r // 4)
  assert(topo.near_nic(r) == (r % 4 < 2 and "mlx5_0" or "mlx5_1"), "rank " .. r .. ": " .. tostring(topo.near_nic(r)))
end
assert(#topo.levels == 2 and topo.levels[2].kind == "nvlink" and topo.levels[1].gbps == 25)
-- an allgather ring in locality order: valid whatever the order
local order2 = topo.ring_order()
local pos = {}
for i, r in ipairs(order2) do pos[r] = i - 1 end
local s = schedule{ collective = "allgather", chunks = nranks, name = "near_nic" }
for t = 0, nranks - 2 do
  local st = s:step()
  for r = 0, nranks - 1 do
    local nxt = order2[(pos[r] + 1) % nranks + 1]
    st:copy(r, nxt, order2[(pos[r] - t) % nranks + 1])
  end
end
return s
