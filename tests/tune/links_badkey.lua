return { links = { intra = { kind = "shm", alpha_us = 1, gbps = 10 }, reduce_gbs = 5 } }
