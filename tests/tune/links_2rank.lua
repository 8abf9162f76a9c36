-- A links table with round numbers, for a cost the test derives by hand (test_tune.sh).
return { links = {
  intra = { kind = "shm", alpha_us = 1, gbps = 10, node_gbps = 0 },
  inter = { kind = "net", alpha_us = 10, gbps = 1, node_gbps = 0 },
  reduce_gbps = 5, copy_gbps = 10, local_passes = 2, call_us = 3, cores_per_node = 0,
} }
