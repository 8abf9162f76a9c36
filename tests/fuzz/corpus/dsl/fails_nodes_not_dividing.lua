-- args: --ranks 6 --nodes 4
-- expect-exit: 2
-- expect: --nodes 4 does not divide 6 ranks into equal nodes
return schedule{}
