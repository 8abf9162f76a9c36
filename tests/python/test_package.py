# test_package.py — the package's face (issue 41): __init__.py only re-exports the public names, each
# from the module that defines it, and the API before the split is all there; __version__ is the
# library's, which is schedc.h's and pyproject.toml's; `python -m schedc info` / `--version` print the
# library's report with the Python side added (text and JSON), naming the libschedc it loaded.
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import schedc

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "schedc"
# the public names before the package was split into modules (issue 41), and those it added
BEFORE = ["Error", "Plan", "PlanInfo", "check", "Comm", "unique_id", "digest", "canonical_plan", "DTYPES", "OPS",
          "EXACT_DTYPES"]
ADDED = ["info", "revision", "__version__"]


def header_version():
    text = (ROOT / "include" / "schedc" / "schedc.h").read_text()
    parts = [re.search(r"^#define SCHEDC_VERSION_%s (\d+)" % k, text, re.M) for k in ("MAJOR", "MINOR", "PATCH")]
    assert all(parts), "schedc.h lacks a SCHEDC_VERSION_* line"
    return ".".join(m.group(1) for m in parts)


def test_version_is_the_library_s_and_the_header_s():
    assert schedc.__version__ == schedc._lib.lib.schedc_version().decode() == header_version()
    pyproject = (ROOT / "python" / "pyproject.toml").read_text()
    assert re.search(r'^version = "%s"$' % re.escape(schedc.__version__), pyproject, re.M), \
        "python/pyproject.toml's version differs from schedc.h's %s" % schedc.__version__


def test_init_only_reexports():
    tree = ast.parse((PKG / "__init__.py").read_text())
    exported = []
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            exported += [a.asname or a.name for a in node.names]
            continue
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]:
            continue
        raise AssertionError("__init__.py line %d is not a re-export: %s" % (node.lineno, ast.dump(node)[:120]))
    assert sorted(exported) == sorted(schedc.__all__)
    for name in schedc.__all__:  # each public name is its module's object, not a copy
        obj = getattr(schedc, name)
        mod = getattr(obj, "__module__", None)
        if mod and mod.startswith("schedc."):
            assert getattr(sys.modules[mod], name) is obj


def test_public_api_unchanged():
    missing = [n for n in BEFORE + ADDED if not hasattr(schedc, n)]
    assert not missing, missing
    assert set(BEFORE) <= set(schedc.__all__)
    assert issubclass(schedc.Error, RuntimeError)
    assert schedc.check("ring", ranks=4).nranks == 4


def run(*args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python")] + sys.path))
    return subprocess.run([sys.executable, "-m", "schedc", *args], capture_output=True, text=True, env=env, timeout=120)


def test_python_m_schedc_version():
    p = run("--version")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "schedc %s (git %s)" % (schedc.__version__, schedc.revision())


def test_python_m_schedc_info_text():
    p = run("info")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "schedc %s (git %s)" % (schedc.__version__, schedc.revision())
    for head in ("backends:", "libraries:", "environment:", "python: %s" % sys.version.split()[0]):
        assert any(l.startswith(head) for l in lines), (head, p.stdout)
    loaded = [l for l in lines if l.startswith("  libschedc loaded: ")]
    assert loaded and loaded[0].split(": ", 1)[1].split("  ")[0] == os.path.realpath(schedc._lib.lib._name)
    assert schedc.info().splitlines()[0] == lines[0]


def test_python_m_schedc_info_json():
    p = run("info", "--json")
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["version"] == schedc.__version__ and d["revision"] == schedc.revision()
    assert [b["name"] for b in d["backends"]][:2] == ["threads", "shm"]
    assert d["python"]["libschedc"] == os.path.realpath(schedc._lib.lib._name)
    assert d["python"]["version"] == sys.version.split()[0]
    assert set(schedc.info(as_json=True)) == set(d)


def test_python_m_schedc_usage():
    p = run()
    assert p.returncode == 2 and "give a command" in p.stderr
    p = run("info", "--nope")
    assert p.returncode == 2
