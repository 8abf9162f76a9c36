-- rs_early_block.lua (tests/cpu/test_shortcuts.c): reduce_scatter on 3 ranks, 3 chunks (one per block). Rank 1
-- finishes its own block at step 0, then (step 1) sums chunk 0 (its input + rank 2's) and hands it to rank 0.
local s = schedule{ collective = "reduce_scatter", chunks = 3, name = "rs_early_block" }
local st = s:step()
st:reduce(0, 1, 1); st:reduce(2, 1, 1)   -- block 1 complete on rank 1
st:reduce(0, 2, 2); st:reduce(1, 2, 2)   -- block 2 complete on rank 2
st = s:step()
st:reduce(2, 1, 0)                        -- rank 1: c0 = r1.c0 + r2.c0
st = s:step()
st:reduce(1, 0, 0)                        -- rank 0: c0 = r0.c0 + (r1.c0 + r2.c0)
return s
