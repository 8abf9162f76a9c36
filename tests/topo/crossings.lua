-- crossings.lua — run with the two-socket PCIe topology (test_topo writes it from
-- pcie_2socket.xml, whose ranks alternate between the sockets): the locality order crosses the
-- socket boundary twice, rank order eight times; groups and levels as the file gives them.
assert(topo.located and nranks == 8)
assert(topo.levels[1].name == "host" and topo.levels[2].name == "numa" and topo.levels[2].ngroups == 2)
assert(topo.levels[2].gbps == 10 and topo.levels[2].alpha_us == 2.5 and topo.levels[2].kind == "pcie")
local order = topo.ring_order()
assert(topo.crossings(order, "numa") == 2, "locality ring crosses the sockets " .. topo.crossings(order, "numa") .. " times")
local plain = {}
for r = 0, nranks - 1 do plain[r + 1] = r end
assert(topo.crossings(plain, "numa") == 8)
assert(topo.crossings(order, "switch") == 4 and topo.crossings(order, 1) == 0)
local g = topo.groups("numa")
assert(#g == 2 and #g[1] == 4 and g[1][1] == 0 and g[1][2] == 2 and g[2][1] == 1)
assert(topo.group_of(1, "numa") == 1 and topo.group_of(6, "numa") == 0)
assert(topo.level_between(0, 1) == "numa" and topo.level_between(0, 2) == "gpu" and topo.level_between(0, 4) == "switch")
assert(topo.level_between(3, 3) == nil)
assert(topo.near_nic(0) == "mlx5_0" and topo.near_nic(1) == "mlx5_1")
assert(not pcall(topo.group_of, 0, "rack"))
-- an allgather ring in locality order: valid whatever the order
local order2 = topo.ring_order()
local pos = {}
for i, r in ipairs(order2) do pos[r] = i - 1 end
local s = schedule{ collective = "allgather", chunks = nranks, name = "crossings" }
for t = 0, nranks - 2 do
  local st = s:step()
  for r = 0, nranks - 1 do
    local nxt = order2[(pos[r] + 1) % nranks + 1]
    st:copy(r, nxt, order2[(pos[r] - t) % nranks + 1])
  end
end
return s
