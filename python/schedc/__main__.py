# __main__.py — `python -m schedc info [--json]` (the build report with the Python side, as
# `schedc info` prints it) and `python -m schedc --version`.
"""python -m schedc info [--json] | --version"""
from __future__ import annotations

import argparse
import json
import sys

from .buildinfo import __version__, info, revision


def main(argv: "list[str] | None" = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m schedc", description="schedc's Python package")
    ap.add_argument("-V", "--version", action="version", version="schedc %s (git %s)" % (__version__, revision()))
    sub = ap.add_subparsers(dest="cmd", metavar="COMMAND")
    ip = sub.add_parser("info", help="what this build contains and finds here, for a bug report")
    ip.add_argument("--json", action="store_true", help="the same facts as one JSON object")
    a = ap.parse_args(argv)
    if a.cmd != "info":
        ap.print_usage(sys.stderr)
        print("python -m schedc: give a command (info) or --version", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(info(as_json=True), indent=1))
    else:
        sys.stdout.write(info())
    return 0


if __name__ == "__main__":
    sys.exit(main())
