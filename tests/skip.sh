# skip.sh — sourced by the test scripts: how a script skips. A skip is exit status 77 (ctest's
# SKIP_RETURN_CODE, set on every test that may skip: tests/CMakeLists.txt); "[SKIP] why" is for
# the reader. A missing tool (libclang, NVRTC, mpirun, torch, ...) skips only while
# SCHEDC_REQUIRE_TOOLS is unset or 0: CI sets it (scripts/test.sh), and there it is a failure.
# Skip only before anything was checked: a skip must never hide a failure found earlier.

# sc_skip WHY — no GPU or the like (never a tool): skip.
sc_skip() { echo "[SKIP] $*"; exit 77; }

# sc_require_tools — true when a missing tool must fail the test (SCHEDC_REQUIRE_TOOLS set, not 0).
sc_require_tools() { [ -n "${SCHEDC_REQUIRE_TOOLS:-}" ] && [ "${SCHEDC_REQUIRE_TOOLS}" != 0 ]; }

# sc_skip_tool TOOL WHY — TOOL is missing: skip, or fail under SCHEDC_REQUIRE_TOOLS.
sc_skip_tool() {
  local tool=$1; shift
  if sc_require_tools; then
    echo "FAIL: $tool is missing and SCHEDC_REQUIRE_TOOLS=$SCHEDC_REQUIRE_TOOLS requires it: $*"
    exit 1
  fi
  echo "[SKIP] no $tool: $*"
  exit 77
}

# sc_need_mpi SCHEDC SCHEDULES — mpirun on PATH and schedc built with MPI, else sc_skip_tool.
sc_need_mpi() {
  command -v mpirun >/dev/null || sc_skip_tool mpirun "not on PATH (Debian: apt-get install openmpi-bin)"
  if "$1" run "$2/ring.lua" --backend mpi --count 1 2>&1 | grep -q "no MPI support"; then
    sc_skip_tool MPI "schedc was built without MPI (Debian: apt-get install libopenmpi-dev, then configure again)"
  fi
}

# sc_need_net SCHEDC SCHEDULES — schedc built with the net backend (UCX), else sc_skip_tool.
sc_need_net() {
  if env -u MASTER_ADDR SCHEDC_RANK=0 SCHEDC_NRANKS=1 "$1" run "$2/ring.lua" --backend net --count 1 2>&1 |
     grep -q "no net backend"; then
    sc_skip_tool UCX "schedc was built without the net backend (Debian: apt-get install libucx-dev, then configure again)"
  fi
}
