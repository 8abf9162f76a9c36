#!/usr/bin/env python3
# elastic_train.py — a data-parallel trainer that survives its ranks: it checkpoints (schedc.checkpoint:
# atomic, CRC32C, last K, verified on load), resumes from the newest good checkpoint at whatever
# world size torchrun gives it, and ends with the weights of the run that never failed, bit for bit
# (docs/recovery.md, docs/python.md "Recovery").
"""Run under torchrun (PyPI's torch 2.x; Debian's 1.13 torchrun crashes on Python 3.11):

    torchrun --nproc-per-node 4 --max-restarts 3 examples/elastic_train.py --steps 40 \\
        --checkpoint-dir /tmp/ck --order exact

Each step sums the gradients of --microbatches L micro-batches (a fixed --mb-size rows each, drawn
from a generator seeded by the step and the micro-batch's index, never by the rank) with
schedc.torch.CanonicalGrads: --order canonical (default) gives the same weights for every world
size N that divides L with L/N a power of two; --order exact for every N up to L. The optimizer
(SGD with momentum), the CanonicalGrads' settings, the RNG states (the step's noise comes from
torch's global generator), the data position and the step are checkpointed every --every steps
into --checkpoint-dir, the last --keep kept. When a rank dies the others raise schedc.Error
(SCHEDC_EPEER) within the timeout and exit non-zero; torchrun (--max-restarts) starts the group
again, possibly with fewer ranks (--nnodes=MIN:MAX), and the script goes on from the newest good
checkpoint. A second launch with a larger --steps and another --nproc-per-node continues the first.
Rank 0 ends with the line "weights <16 hex digits>": the same whatever happened on the way.

Test aids (tests/python/test_recover.py): --die RANK:STEP[:ckpt|:node][@ATTEMPT] makes RANK SIGKILL
itself at the start of STEP (:ckpt: halfway through writing STEP's checkpoint; :node: its node's
torchrun agent too, so the job goes on with fewer nodes under --nnodes=MIN:MAX) in torchrun's attempt ATTEMPT (TORCHELASTIC_RESTART_COUNT; default 0), and --inject SPEC sets
SCHEDC_INJECT (kill:RANK:PLANSTEP: inside a collective) in the first attempt only.
"""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

import schedc
import schedc.torch as st
from schedc import checkpoint

D_IN, D_HID = 16, 32


def batch(step, leaf, rows, noise):
    """Micro-batch `leaf` of step `step`: a function of the two indices (and the step's noise), never
    of the rank or the world size."""
    g = torch.Generator().manual_seed(1_000_003 * step + leaf)
    x = torch.randn(rows, D_IN, generator=g)
    w = torch.linspace(-1, 1, D_IN)
    y = torch.tanh(x @ w).unsqueeze(1) + noise * torch.randn(rows, 1, generator=g)
    return x, y


def init_group(attempt):
    """The gloo group schedc bootstraps through. Under torchrun every attempt gets keys of its own in
    the agent's store: torch 2.15's gloo otherwise finds the addresses a previous attempt's ranks
    left there and fails connecting to them ("Connection refused", one restart in two here)."""
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True":
        dist.init_process_group("gloo")
        return
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    base = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, is_master=False)
    dist.init_process_group("gloo", store=dist.PrefixStore("elastic_train/attempt_%d/" % attempt, base), rank=rank,
                            world_size=world)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--checkpoint-dir", required=True)
    ap.add_argument("--order", choices=["canonical", "exact"], default="canonical")
    ap.add_argument("--microbatches", type=int, default=None, help="L, micro-batches per step (default: 12 with "
                    "--order exact, else 8)")
    ap.add_argument("--mb-size", type=int, default=8)
    ap.add_argument("--every", type=int, default=2, help="checkpoint every E steps (default 2)")
    ap.add_argument("--keep", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=30.0, help="schedc's timeout of every wait (seconds)")
    ap.add_argument("--die", action="append", default=[], metavar="RANK:STEP[:ckpt|:node][@ATTEMPT]")
    ap.add_argument("--inject", default="", metavar="SPEC")
    ap.add_argument("--timing", action="store_true", help="print when a rank dies, fails, resumes and steps (for "
                    "docs/performance.md's restart times)")
    a = ap.parse_args(argv)
    if a.microbatches is None:
        a.microbatches = 12 if a.order == "exact" else 8
    if a.inject and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        os.environ["SCHEDC_INJECT"] = a.inject
    attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    init_group(attempt)
    rank, world = dist.get_rank(), dist.get_world_size()
    die_at, die_ckpt, die_node = set(), set(), set()
    for spec in a.die:  # RANK:STEP[:ckpt][@ATTEMPT]
        what, _, when = spec.partition("@")
        p = what.split(":")
        if int(when or 0) == attempt and int(p[0]) == rank:
            (die_ckpt if p[2:] == ["ckpt"] else die_node if p[2:] == ["node"] else die_at).add(int(p[1]))
    comm = st.init_comm(timeout=a.timeout)
    torch.manual_seed(1234)
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, D_HID), torch.nn.Tanh(), torch.nn.Linear(D_HID, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    grads = st.CanonicalGrads(model.parameters(), a.microbatches, comm, op="avg", exact=a.order == "exact")
    state = {"model": model, "optimizer": opt, "grads": grads}
    got = checkpoint.load(a.checkpoint_dir, state)
    start = got["data"]["next_step"] if got else 0
    if got and rank == 0:
        print("elastic_train: %d ranks resume from %s (step %d)" % (world, got["path"], start), file=sys.stderr,
              flush=True)
    def mark(what):
        if a.timing:
            print("elastic_train: t=%.6f rank %d %s" % (time.time(), rank, what), file=sys.stderr, flush=True)

    try:
        for step in range(start, a.steps):
            if step in die_at or step in die_node:
                mark("dies before step %d" % step)
            if step in die_at:
                os.kill(os.getpid(), signal.SIGKILL)
            if step in die_node:  # the node: its torchrun agent (whose other workers then fail on their own) and this
                os.kill(os.getppid(), signal.SIGKILL)
                os.kill(os.getpid(), signal.SIGKILL)
            noise = float(torch.rand(()))  # torch's global generator: the same draw on every rank
            for leaf in grads.my_leaves:
                x, y = batch(step, leaf, a.mb_size, 0.1 * noise)
                torch.nn.functional.mse_loss(model(x), y, reduction="sum").backward()
                grads.add(leaf)
            grads.reduce()
            opt.step()
            opt.zero_grad(set_to_none=True)
            done = step + 1
            if done == start + 1 and got:
                mark("finished step %d, its first after resuming" % step)
            if done % a.every == 0 or done == a.steps:
                half = (lambda: (mark("dies writing a checkpoint"), os.kill(os.getpid(), signal.SIGKILL))) \
                    if done in die_ckpt else None
                checkpoint.save(a.checkpoint_dir, done, dict(state, data={"next_step": done,
                                                                          "samples": done * a.microbatches * a.mb_size}),
                                keep=a.keep, halfway=half)
    except (schedc.Error, RuntimeError) as e:  # a dead peer: SCHEDC_EPEER / SCHEDC_ETIMEOUT named (or gloo's
        mark("failed")                                                        # in a checkpoint's barrier)
        print("elastic_train: rank %d: %s" % (rank, e), file=sys.stderr, flush=True)
        comm.close()
        os._exit(1)  # torchrun restarts the group; the torch process group is broken with it
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    if rank == 0:
        print("weights %016x" % schedc.digest(flat), flush=True)
    grads.close()
    comm.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
