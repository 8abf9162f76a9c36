-- dgx_h100.lua — four NVIDIA DGX H100 nodes (8 H100 SXM GPUs each, 32 ranks), for the cost model
-- and `schedc tune --topology ... --model-only`. Numbers are public specifications derated to what
-- collective libraries typically reach; they are a model's inputs, not measurements here.
--   intra: NVLink 4 through NVSwitch, 18 links x 25 GB/s per direction = 450 GB/s per GPU and
--          direction; ~370 GB/s achieved; ~3 us per dependent step (kernel-side flag handoff).
--   inter: eight 400 Gb/s ConnectX-7 NICs per node, one per GPU: 50 GB/s per GPU and direction,
--          ~45 GB/s achieved, 400 GB/s per node; ~8 us per step (RDMA + proxy).
--   reduce: HBM3 at 3.35 TB/s, a reduce reads two operands and writes one: ~1000 GB/s of one
--          operand. In-place GPU collectives make no local copies.
return {
  nnodes = 4, ranks_per_node = 8,
  links = {
    intra = { kind = "nvlink", alpha_us = 3.0, gbps = 370, node_gbps = 0 },
    inter = { kind = "net", alpha_us = 8.0, gbps = 45, node_gbps = 360 },
    reduce_gbps = 1000, copy_gbps = 1300, local_passes = 0, call_us = 5.0, cores_per_node = 0,
  },
}
