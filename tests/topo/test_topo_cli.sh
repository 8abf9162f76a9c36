#!/usr/bin/env bash
# test_topo_cli.sh SCHEDC SRC — `schedc topo`: discovery of this machine (its NUMA nodes and
# cores as Linux counts them) written as a topology file that check/cost/tune accept; --json;
# imports; usage errors (exit 2) and bad XML (exit 1, file:line). Skips (77) the discovery part
# when the build has no hwloc, after checking that it says so.
set -u
S=$1; SRC=$2
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect() { # EXIT-STATUS WHAT CMD...
  local want=$1 what=$2; shift 2
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [ "$rc" = "$want" ]; then ok; else bad "$what: exit $rc, wanted $want: $(cat "$W/err" | head -3)"; fi
}
skip=0
if "$S" topo >"$W/sum" 2>"$W/err"; then
  # Linux's count of NUMA nodes and cores (distinct core ids per package) on this machine
  nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l); [ "$nodes" -ge 1 ] || nodes=1
  cores=$(lscpu -p=socket,core 2>/dev/null | grep -v '^#' | sort -u | wc -l)
  grep -q "$nodes NUMA node" "$W/sum" && ok || bad "summary does not say $nodes NUMA node(s): $(head -1 "$W/sum")"
  if [ "$cores" -gt 0 ]; then grep -q " $cores core" "$W/sum" && ok || bad "summary does not say $cores cores: $(head -1 "$W/sum")"; fi
  expect 0 "topo -o" "$S" topo -o "$W/here.lua"
  grep -q "^wrote $W/here.lua" "$W/out" && ok || bad "no 'wrote' line"
  expect 0 "check hierarchical --topology (discovered)" "$S" check "$SRC/schedules/hierarchical.lua" --topology "$W/here.lua"
  grep -q "ok: allreduce 'hierarchical', $cores ranks (1 node)" "$W/out" && ok || bad "hierarchical on the discovered file: $(cat "$W/out")"
  expect 0 "cost --topology (discovered)" "$S" cost "$SRC/schedules/ring.lua" --topology "$W/here.lua" --sizes 1M
  grep -q "intra shm" "$W/out" && ok || bad "cost does not read the levels: $(head -2 "$W/out")"
  expect 0 "topo --json" "$S" topo --json
  /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); h=d["hosts"][0]; assert sum(n["cpus"] for n in h["numa"]) == int(sys.argv[2]), h; assert h["nvlink"] in ("none","unknown","mesh","nvswitch")' "$W/out" "$cores" && ok || bad "JSON shape"
  # a tuning table names the machine it was measured on; another machine's is refused
  fp=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["fingerprint"])' "$W/out")
  expect 0 "compile ring for the table" "$S" compile "$SRC/schedules/ring.lua" --ranks 2 -o "$W/ring.plan"
  printf 'schedc-tuning 1\ntopology %s\nentry allreduce 2 0 inf 0 ring.plan\n' "$fp" >"$W/here.txt"
  expect 0 "tuning table of this machine" "$S" bench --ranks 2 --sizes 8 --tuning "$W/here.txt" --iters 2 --warmup 1
  printf 'schedc-tuning 1\ntopology 0123456789abcdef\nentry allreduce 2 0 inf 0 ring.plan\n' >"$W/other.txt"
  expect 1 "tuning table of another machine" "$S" bench --ranks 2 --sizes 8 --tuning "$W/other.txt" --iters 2 --warmup 1
  grep -qF "other.txt:2: this tuning table was measured on a machine whose topology fingerprint is 0123456789abcdef; this machine's is $fp" "$W/err" "$W/out" && ok || bad "other machine's table: $(cat "$W/err" "$W/out" | head -3)"
  # --model-only tables name the machine their file describes: this machine's file, taken here;
  # a synthetic two-socket machine's, refused here
  n=$(grep -c '^ *{ host = ' "$W/here.lua")
  expect 0 "tune --model-only on this machine's file" "$S" tune --topology "$W/here.lua" --model-only --sizes 8,1M -o "$W/mh"
  grep -qx "topology $fp" "$W/mh/tuning.txt" && ok || bad "a --model-only table does not name its file's machine $fp: $(cat "$W/mh/tuning.txt")"
  expect 0 "--model-only table of this machine" "$S" bench --ranks "$n" --sizes 8 --tuning "$W/mh/tuning.txt" --iters 2 --warmup 1
  expect 0 "topo --synthetic -o" "$S" topo --synthetic "pack:2 core:4" -o "$W/syn.lua"
  sfp=$(sed -n 's/^ *fingerprint = "\([0-9a-f]*\)",/\1/p' "$W/syn.lua")
  expect 0 "tune --model-only on a synthetic file" "$S" tune --topology "$W/syn.lua" --model-only --sizes 8,1M -o "$W/ms"
  expect 1 "--model-only table of another machine" "$S" bench --ranks 8 --sizes 8 --tuning "$W/ms/tuning.txt" --iters 2 --warmup 1
  grep -qF "this tuning table was measured on a machine whose topology fingerprint is $sfp; this machine's is $fp" "$W/err" "$W/out" && ok ||
    bad "another machine's --model-only table: $(cat "$W/err" "$W/out" | head -3)"
  expect 0 "topo --synthetic" "$S" topo --synthetic "pack:2 core:4"
  grep -q "ranks: 8 (one per core); levels, outermost first: host .*, numa .*, core" "$W/out" && ok || bad "synthetic: $(tail -1 "$W/out")"
  # a process that ignores SIGCHLD (inherited across exec): hwloc XML still loads
  expect 0 "hwloc XML with SIGCHLD ignored" bash -c "trap '' CHLD; exec '$S' topo --from '$SRC/tests/topo/hwloc_2socket_gpu.xml'"
  grep -q "3 GPUs, 2 NICs" "$W/out" && ok || bad "SIGCHLD ignored: $(head -1 "$W/out" "$W/err")"
  # an AWS-like capture: the EFA (RDMA) is the nearest NIC, not the ENA beside it
  expect 0 "hwloc XML with EFA and ENA" "$S" topo --from "$SRC/tests/topo/hwloc_efa_ena.xml"
  grep -q "GPU 0000:11:1c.0: NUMA 0, behind a PCIe switch, nearest NIC rdmap17s27$" "$W/out" && ok || bad "EFA preferred: $(grep 11:1c "$W/out")"
else
  grep -q "discovery is unavailable" "$W/err" && ok || bad "topo failed without saying discovery is unavailable: $(cat "$W/err")"
  skip=1
fi
# imports (no hwloc needed for NCCL XML)
expect 0 "topo --from nvswitch" "$S" topo --from "$SRC/tests/topo/nvswitch.xml" -o "$W/nvs.lua"
grep -q "8 GPUs, 8 NICs, NVLink nvswitch" "$W/out" && ok || bad "nvswitch summary: $(head -1 "$W/out")"
expect 0 "ring --topology nvs" "$S" check "$SRC/schedules/ring.lua" --topology "$W/nvs.lua"
expect 0 "cost --topology nvs" "$S" cost "$SRC/schedules/ring.lua" --topology "$W/nvs.lua" --sizes 64M
grep -q "intra nvlink alpha 3.00 us, 360.00 GB/s" "$W/out" && ok || bad "cost model from levels: $(sed -n 2p "$W/out")"
expect 0 "tune --model-only --topology nvs" "$S" tune --topology "$W/nvs.lua" --model-only --sizes 1M,64M
expect 0 "topo --from fused --json" "$S" topo --from "$SRC/tests/topo/fused_2host.xml" --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["hosts"]) == 2 and d["ranks"] == 8; assert d["hosts"][1]["gpus"][3]["nics"] == ["0000:3c:00.0"], d' "$W/out" && ok || bad "fused JSON"
# the NCCL input files clouds publish (tests/topo/cloud_*.xml): GPUs and NICs by PCI class
for f in ndv2 ndv4 ndv5 p4d p4de; do
  expect 0 "topo --from cloud_$f" "$S" topo --from "$SRC/tests/topo/cloud_$f.xml" --json
  cp "$W/out" "$W/cloud_$f.json"
done
/usr/bin/python3 -c '
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f)); h = d["hosts"][0]
    assert d["ranks"] == 8 and len(h["gpus"]) == 8, (f, d)
    assert all(g["numa"] >= 0 and len(g["nics"]) >= 1 for g in h["gpus"]), (f, h["gpus"])
    assert sorted(set(g["numa"] for g in h["gpus"])) == [n["id"] for n in h["numa"]], (f, h)
' "$W"/cloud_*.json && ok || bad "cloud forms' JSON"
expect 1 "topo --from cloud_p5_classless" "$S" topo --from "$SRC/tests/topo/cloud_p5_classless.xml"
grep -q "cloud_p5_classless.xml:9: no GPU, and 16 <pci> devices without a class" "$W/err" && ok || bad "classless: $(cat "$W/err")"
# errors
printf '<system>\n  <cpu numaid="0">\n    <pci busid="0000:01:00.0">\n  </cpu>\n</system>\n' >"$W/bad.xml"
expect 1 "bad XML" "$S" topo --from "$W/bad.xml"
grep -q "^schedc topo: $W/bad.xml:4: closing tag </cpu> does not match <pci>" "$W/err" && ok || bad "bad XML message: $(cat "$W/err")"
expect 1 "missing file" "$S" topo --from "$W/none.xml"
expect 1 "a FIFO" bash -c "mkfifo '$W/fifo' && timeout 10 '$S' topo --from '$W/fifo'"
# topology files with levels: mistakes named; a level the topology lacks, at the user's line
topo_err() { # WHAT EXPECTED-TEXT LUA-BODY
  printf '%s\n' "$3" >"$W/t.lua"
  expect 2 "$1" "$S" check "$SRC/schedules/ring.lua" --topology "$W/t.lua" # a bad topology is a usage error
  grep -qF "$2" "$W/err" && ok || bad "$1: wanted '$2', got: $(head -2 "$W/err")"
}
topo_err "first level not host" 'levels[1] must be "host" (the outermost level), not "numa"' \
  'return { levels = { { name = "numa" } }, ranks = { { numa = 0 } } }'
topo_err "rank without a level id" "ranks[2] (rank 1) needs an integer 'core'" \
  'return { levels = { { name = "host" }, { name = "core" } }, ranks = { { host = 0, core = 0 }, { host = 0 } } }'
topo_err "nodes and ranks" "give either 'ranks' (with 'levels') or 'nodes'" \
  'return { nodes = { { 0 } }, levels = { { name = "host" } }, ranks = { { host = 0 } } }'
topo_err "bad gbps" "levels[1].gbps must be a number > 0" \
  'return { levels = { { name = "host", gbps = 0 } }, ranks = { { host = 0 } } }'
printf 'local g = topo.groups("host")\nlocal x = topo.group_of(0, "rack")\n' >"$W/uses.lua"
expect 1 "unknown level in a schedule" "$S" check "$W/uses.lua" --topology "$W/nvs.lua"
grep -qF "uses.lua:2: bad argument #2 to 'group_of' (no level 'rack' in this topology (levels: host, gpu))" "$W/err" && ok || bad "unknown level: $(head -2 "$W/err")"
expect 2 "unknown option" "$S" topo --bogus
expect 2 "missing value" "$S" topo --from
expect 2 "stray argument" "$S" topo extra
expect 2 "--from and --synthetic" "$S" topo --from a --synthetic b
expect 2 "-o onto the input" "$S" topo --from "$SRC/tests/topo/mesh.xml" -o "$SRC/tests/topo/mesh.xml"
expect 0 "help" "$S" topo --help
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] || exit 1
[ "$skip" = 0 ] || exit 77
