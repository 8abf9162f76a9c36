# trees.py — the tests' independent evaluator of the reduction trees Plan.order() prints:
# "(((r1+r2)+r3)+r0)" is parsed and evaluated with numpy in exactly that order, so a result
# can be compared bit for bit with what the library computed.
import numpy as np


def parse(s):
    """'((r0+r1)+r2)' -> nested tuples of ints: ((0, 1), 2)."""
    pos = 0

    def node():
        nonlocal pos
        if s[pos] == "(":
            pos += 1
            a = node()
            assert s[pos] == "+", s
            pos += 1
            b = node()
            assert s[pos] == ")", s
            pos += 1
            return (a, b)
        assert s[pos] == "r", s
        j = pos + 1
        while j < len(s) and s[j].isdigit():
            j += 1
        v = int(s[pos + 1:j])
        pos = j
        return v

    t = node()
    assert pos == len(s), s
    return t


def evaluate(tree, leaf):
    """leaf(i) -> numpy array; sums in the tree's order, in the arrays' dtype."""
    if isinstance(tree, int):
        return leaf(tree)
    return evaluate(tree[0], leaf) + evaluate(tree[1], leaf)


def canonical(lo, n):
    """The canonical tree over leaves lo..lo+n-1 (left: the largest power of two below n)."""
    if n == 1:
        return lo
    p = 1
    while p * 2 < n:
        p *= 2
    return (canonical(lo, p), canonical(lo + p, n - p))


def chunk_range(K, C, c):
    return (c * K) // C, ((c + 1) * K) // C


def reduce_by_plan(plan, rank, inputs, acc=np.float32):
    """What `rank` must hold after an allreduce sum of inputs[r] (1-D arrays) by `plan`:
    chunk by chunk, the tree plan.order(chunk, rank), evaluated in `acc` (None: input dtype)."""
    K = len(inputs[0])
    C = plan.info.nchunks
    out = np.zeros(K, dtype=acc or inputs[0].dtype)
    for c in range(C):
        lo, hi = chunk_range(K, C, c)
        s = plan.order(c, rank)
        if s == "-" or lo == hi:
            continue
        conv = (lambda a: a.astype(acc)) if acc else (lambda a: a)
        out[lo:hi] = evaluate(parse(s), lambda r: conv(inputs[r][lo:hi]))
    return out
