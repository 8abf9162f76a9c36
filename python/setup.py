# setup.py — builds libschedc with the project's CMake (the source is this folder's parent) and
# puts it, with the shipped schedules, inside the package as _native/lib and _native/share/schedc:
# the library finds schedules by name in share/schedc beside its lib/ folder, so names resolve.
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class BuildWithLib(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib) / "schedc" / "_native"
        lib = os.environ.get("SCHEDC_LIBRARY")
        if lib:
            src = Path(lib)  # a prebuilt library: ship that one
        else:
            bdir = Path(os.environ.get("SCHEDC_BUILD_DIR", ROOT / "build-python"))
            subprocess.check_call(["cmake", "-S", str(ROOT), "-B", str(bdir), "-DCMAKE_BUILD_TYPE=Release"])
            subprocess.check_call(["cmake", "--build", str(bdir), "--target", "schedc_shared", "-j", str(os.cpu_count() or 2)])
            src = bdir / "lib" / "libschedc.so"
        if not src.exists():
            sys.exit("schedc: %s not found" % src)
        (dest / "lib").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.resolve(), dest / "lib" / "libschedc.so")
        share = dest / "share" / "schedc"
        if share.exists():
            shutil.rmtree(share)
        shutil.copytree(ROOT / "schedules", share)


setup(cmdclass={"build_py": BuildWithLib})
