#!/usr/bin/env python3
"""test_circles.py BUILD_DIR — no call circle between the library's C files (docs/design.md).

Read from the object files, as a linker sees them: file A calls file B when A's object needs a
symbol that B's object defines (nm -u against nm --defined-only). A circle (a strongly connected
set of two or more files) means neither file can be read, tested or replaced without the other.
Prints each circle found and exits 1; 0 when there is none.
"""
import os
import subprocess
import sys

FOLDERS = ("common", "codegen", "dsl", "ops", "runtime")


def objects(build):
    for root, _, files in os.walk(os.path.join(build, "CMakeFiles")):
        for f in files:
            if not f.endswith(".c.o"):
                continue
            path = os.path.join(root, f)
            # .../schedc_core.dir/runtime/core/comm.c.o -> runtime/core/comm.c
            rel = path.split(".dir/", 1)[1][:-2] if ".dir/" in path else None
            if rel and rel.startswith(FOLDERS) and "schedc_shared.dir" not in path and "/tests/" not in path:
                yield rel, path


def symbols(path, flag):
    out = subprocess.run(["nm", flag, path], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main():
    build = sys.argv[1]
    objs = dict(objects(build))
    if not objs:
        print("FAIL: no library objects under %s/CMakeFiles" % build)
        return 1
    defined, needed = {}, {}
    for rel, path in objs.items():
        for s in symbols(path, "--defined-only"):
            defined.setdefault(s, rel)
        needed[rel] = symbols(path, "-u")
    calls = {a: sorted({defined[s] for s in needed[a] if s in defined and defined[s] != a}) for a in objs}
    # Tarjan's strongly connected components
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in calls[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(objs):
        if v not in index:
            visit(v)
    for comp in sccs:
        print("FAIL: call circle: " + ", ".join(comp))
        for a in comp:
            print("  %s calls %s" % (a, ", ".join(b for b in calls[a] if b in comp)))
    print("%d passed, %d failed" % (0 if sccs else 1, len(sccs)))
    return 1 if sccs else 0


if __name__ == "__main__":
    sys.exit(main())
