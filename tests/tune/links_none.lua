return { nnodes = 1, ranks_per_node = 2 }
