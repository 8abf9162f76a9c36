#!/usr/bin/env python3
# accuracy.py — compression's accuracy on real training (issue 37, docs/compression.md):
# examples/train_mlp (C, 4 ranks) and examples/torch_ddp.py (DDP, 4 processes over gloo) trained to
# the same number of steps uncompressed (f32), exactly (exact mode), and compressed with error
# feedback (q16, q8, top-1%; torch: PowerSGD rank 4 too). Writes bench/compress/accuracy.tsv (final
# loss per configuration and its relative difference from f32's), curves.tsv (every loss printed) and
# the curves as bench/compress/curves_train_mlp.svg and curves_torch.svg.
# Usage: bench/compress/accuracy.py [BUILD_DIR] [--steps S] [--ranks N]   (PYTHON for the torch example)
import argparse
import os
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svgplot import svg  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "bench", "compress")

C_CONFIGS = [("f32", []), ("exact", ["--order", "exact"]), ("q16+EF", ["--wire", "q16", "--feedback"]),
             ("q8+EF", ["--wire", "q8", "--feedback"]), ("top1%+EF", ["--topk", "0.01", "--feedback"])]
T_CONFIGS = [("f32", ["--reduce", "gloo"]), ("exact", ["--reduce", "schedc", "--order", "exact"]),
             ("q16+EF", ["--reduce", "gloo", "--compress", "q16"]), ("q8+EF", ["--reduce", "gloo", "--compress", "q8"]),
             ("top1%+EF", ["--reduce", "gloo", "--compress", "topk", "--topk-fraction", "0.01"]),
             ("PowerSGD r4", ["--reduce", "gloo", "--compress", "powersgd", "--powersgd-rank", "4"])]


def run(cmd, env=None):
    """stdout and seconds of cmd; a failed run is said and run once more. A torch 1.13 gloo job on a
    loaded machine has been seen to end with a rank that never exited (a futex wait at exit, after
    its last output): once the weights digest is printed the job gets 20 s to exit, then its process
    group is killed and the output used, saying so."""
    for attempt in (1, 2):
        t = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                             start_new_session=True)
        lines, done = [], threading.Event()

        def read():
            for line in p.stdout:
                lines.append(line)
                if line.startswith("weights digest"):
                    done.set()
            done.set()
        th = threading.Thread(target=read, daemon=True)
        th.start()
        done.wait(3600)
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            print("compress_accuracy: %s did not exit 20 s after its output; killed" % " ".join(cmd), file=sys.stderr)
        th.join(5)
        out = "".join(lines)
        if not p.returncode or "weights digest" in out:
            return out, time.time() - t
        print("compress_accuracy: %s failed (exit %d, attempt %d):\n%s\n%s" % (" ".join(cmd), p.returncode, attempt,
                                                                              out[-800:], p.stderr.read()[-2000:]), file=sys.stderr)
    sys.exit(1)


def curve(out, pat):
    return [(int(m.group(1)), float(m.group(2))) for m in re.finditer(pat, out)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--ranks", type=int, default=4)
    a = ap.parse_args()
    b = os.path.join(ROOT, a.build)
    py = os.environ.get("PYTHON", "/usr/bin/python3")
    env = dict(os.environ, SCHEDC_LIBRARY=os.path.join(b, "lib", "libschedc.so"),
               PYTHONPATH=os.path.join(ROOT, "python"), OMP_NUM_THREADS="1")
    rows, curves = [], {"train_mlp": [], "torch_ddp": []}
    for name, args in C_CONFIGS:
        out, sec = run([os.path.join(b, "schedc"), "launch", "-n", str(a.ranks), "--", os.path.join(b, "train_mlp"),
                        "--steps", str(a.steps)] + args, env)
        curves["train_mlp"].append((name, curve(out, r"step\s+(\d+)\s+loss ([0-9.eE+-]+)")))
        rows.append(("train_mlp", name, " ".join(args), curves["train_mlp"][-1][1][-1][1], sec))
    for name, args in T_CONFIGS:
        out, sec = run([py, os.path.join(ROOT, "examples", "torch_ddp.py"), "--nprocs", str(a.ranks),
                        "--microbatches", str(a.ranks), "--steps", str(a.steps)] + args, env)
        curves["torch_ddp"].append((name, [(s + 1, v) for s, v in curve(out, r"step (\d+) loss ([0-9.eE+-]+)")]))
        rows.append(("torch_ddp", name, " ".join(args), curves["torch_ddp"][-1][1][-1][1], sec))
    res = OUT
    load = open("/proc/loadavg").read().split()[:3]
    head = ["# date: %s" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "# command: bench/compress/accuracy.py %s --steps %d --ranks %d (torch: %s)" % (a.build, a.steps, a.ranks, py),
            "# load average after: %s" % " ".join(load)]
    with open(os.path.join(res, "accuracy.tsv"), "w") as f:
        f.write("# accuracy.tsv — final loss after the same steps, against f32's (bench/compress/accuracy.py)\n")
        f.write("\n".join(head) + "\n# tail_mean: the mean of the last 10%% of the losses printed (torch_ddp's held-out loss swings\n"
                "# by +-20%% from step to step: the final loss alone compares two points of that noise)\n"
                "# columns: trainer config final_loss rel_to_f32 tail_mean tail_rel_to_f32 seconds args\n")
        tails = {}
        for t, cs in curves.items():
            for n, c in cs:
                last = [v for st, v in c if st > c[-1][0] * 0.9]
                tails[t, n] = sum(last) / len(last)
        base = {t: v for t, n, _, v, _ in rows if n == "f32"}
        for t, n, args, v, sec in rows:
            tm, tb = tails[t, n], tails[t, "f32"]
            f.write("%s\t%s\t%.7g\t%+.4f%%\t%.7g\t%+.4f%%\t%.0f\t%s\n" % (t, n, v, (v / base[t] - 1) * 100, tm,
                                                                 (tm / tb - 1) * 100, sec, args))
    with open(os.path.join(res, "curves.tsv"), "w") as f:
        f.write("# curves.tsv — every loss the trainers printed (bench/compress/accuracy.py)\n")
        f.write("\n".join(head) + "\n# columns: trainer config step loss\n")
        for t, cs in curves.items():
            for n, c in cs:
                for s, v in c:
                    f.write("%s\t%s\t%d\t%.7g\n" % (t, n, s, v))
    svg("examples/train_mlp, %d ranks: training loss" % a.ranks, curves["train_mlp"],
        os.path.join(OUT, "curves_train_mlp.svg"))
    svg("examples/torch_ddp.py, %d processes (gloo): loss on held-out rows" % a.ranks, curves["torch_ddp"],
        os.path.join(OUT, "curves_torch.svg"))
    print(open(os.path.join(res, "accuracy.tsv")).read())


if __name__ == "__main__":
    main()
