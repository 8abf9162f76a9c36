-- args: --topology dup_rank.topo
-- expect-exit: 2
-- expect: dup_rank.topo: rank 1 appears on two nodes
return schedule{}
