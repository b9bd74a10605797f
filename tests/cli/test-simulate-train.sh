#!/usr/bin/env bash
# test-simulate-train.sh TWB ASSETS — twb simulate --mode train as a user
# runs it (TAP): virtual ranks in one process train as a real MPI run of as
# many ranks does (the same loss and weights within float32 reduction-order
# rounding); asynchronous updates and compression change what is learnt;
# time is virtual (the time mode's step); bad requests are refused.
set -u
twb=$(realpath "$1")
assets=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
fail () { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check () { if eval "$2"; then ok "$1"; else fail "$1" "${3:-}"; fi; }
json_get () { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }
cp "$assets/models/spirals.json" "$tmp/spirals.json"
model=$tmp/spirals.json

# Largest |a − b| / max |a| over the parameters two safetensors files share.
cat >"$tmp/cmp.py" <<'PY'
import json, struct, sys
def load(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__" or v["dtype"] != "F32" or k.startswith("optimizer."):
            continue
        s, e = v["data_offsets"]
        raw = b[8 + n + s:8 + n + e]
        out[k] = struct.unpack("<%df" % (len(raw) // 4), raw)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
names = sorted(set(a) & set(b))
if not names:
    print("no parameter in common"); sys.exit(1)
scale = max(max(abs(x) for x in a[k]) for k in names)
worst = max(max(abs(x - y) for x, y in zip(a[k], b[k])) for k in names) / scale
print("%d parameters, worst %.3g relative" % (len(names), worst))
sys.exit(not worst < float(sys.argv[3]))
PY

if command -v mpirun >/dev/null; then
  export OMPI_MCA_rmaps_base_oversubscribe=1
  real=$("$twb" train "$model" --ranks 2 --max-steps 30 --json --checkpoint "$tmp/real.safetensors" 2>"$tmp/r.err")
  sim=$("$twb" simulate "$model" --mode train --ranks 2 --nodes 1 --devices-per-node 2 \
          --max-steps 30 --json --save-weights "$tmp/sim.safetensors" 2>"$tmp/s.err")
  a=$(echo "$real" | json_get train_loss 2>/dev/null)
  b=$(echo "$sim" | json_get train_loss 2>/dev/null)
  check "2 virtual ranks: the loss of a real 2-rank MPI run ($a vs $b)" \
    "/usr/bin/python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-5 * abs(a))' '$a' '$b'" \
    "$(head -c 300 "$tmp/r.err") // $sim $(head -c 300 "$tmp/s.err")"
  # The engine test bounds weights by 1e-4 relative (tests/engine/dist/test-dp.c).
  w=$(/usr/bin/python3 "$tmp/cmp.py" "$tmp/real.safetensors" "$tmp/sim.safetensors" 1e-4 2>&1)
  check "2 virtual ranks: the weights of the real run ($w)" "[ $? -eq 0 ]" "$w"
else
  ok "# SKIP the real run: Open MPI's mpirun is not installed"
  ok "# SKIP the real run: Open MPI's mpirun is not installed"
fi

# Virtual time: the time mode's step for the same cluster.
t=$("$twb" simulate "$model" --ranks 4 --nodes 1 --devices-per-node 4 --batch 32 --json 2>/dev/null)
s=$("$twb" simulate "$model" --mode train --ranks 4 --nodes 1 --devices-per-node 4 --max-steps 20 --json 2>"$tmp/e")
check "4 virtual ranks: 20 steps, each of the time mode's step, the virtual time their sum" \
  "/usr/bin/python3 -c 'import json, sys; t = json.loads(sys.argv[1])[\"configs\"][0][\"step_ms\"]; s = json.loads(sys.argv[2]); sys.exit(not (s[\"steps\"] == 20 and abs(s[\"virtual_step_ms\"] - t) <= 1e-9 * t and abs(s[\"virtual_s\"] - 20 * t / 1e3) <= 1e-9 * t))' '$t' '$s'" \
  "$t // $s $(head -c 300 "$tmp/e")"

# Update strategies change what is learnt (the same seed and batches).
sync=$("$twb" simulate "$model" --mode train --ranks 4 --nodes 1 --devices-per-node 4 --epochs 3 --json 2>/dev/null)
async=$("$twb" simulate "$model" --mode train --ranks 4 --nodes 1 --devices-per-node 4 --epochs 3 --async 2 --json 2>"$tmp/e")
check "--async 2: another curve, gradients applied by the server with staleness" \
  "[ '$(echo "$async" | json_get train_loss)' != '$(echo "$sync" | json_get train_loss)' ] && [ \$(echo '$async' | json_get async_updates) -gt 0 ]" \
  "$sync // $async $(head -c 300 "$tmp/e")"
tk=$("$twb" simulate "$model" --mode train --ranks 4 --nodes 1 --devices-per-node 4 --epochs 3 --compress topk:0.01 --json 2>"$tmp/e")
check "--compress topk:0.01: another curve, fewer bytes a step" \
  "[ '$(echo "$tk" | json_get train_loss)' != '$(echo "$sync" | json_get train_loss)' ] && /usr/bin/python3 -c 'import json, sys; a, b = (json.loads(x)[\"sent_bytes_per_step\"] for x in sys.argv[1:]); sys.exit(not a < 0.2 * b)' '$tk' '$sync'" \
  "$sync // $tk $(head -c 300 "$tmp/e")"
check "synchronous: it learns (test accuracy $(echo "$sync" | json_get test_accuracy 2>/dev/null))" \
  "/usr/bin/python3 -c 'import json, sys; sys.exit(not json.loads(sys.argv[1])[\"test_accuracy\"] > 0.5)' '$sync'"
text=$("$twb" simulate "$model" --mode train --ranks 16 --nodes 2 --devices-per-node 8 --max-steps 5 2>&1)
check "16 virtual ranks on this machine's cores: done, with the virtual time" \
  "echo \"\$text\" | grep -q 'done after 5 steps' && echo \"\$text\" | grep -q 'virtual time'" "$text"

# A real trace of the model as the device: its op times stand for each rank's.
"$twb" profile "$model" --steps 10 --trace "$tmp/prof.json" >/dev/null 2>&1
tr=$("$twb" simulate "$model" --device "$tmp/prof.json" --ranks 8 --json 2>"$tmp/e")
h=$("$twb" simulate "$model" --ranks 8 --json 2>/dev/null)
check "--device TRACE (twb profile's): a step from the traced times, not the H100 roofline's" \
  "/usr/bin/python3 -c 'import json, sys; a, b = (json.loads(x)[\"configs\"][0] for x in sys.argv[1:]); sys.exit(not (a[\"step_ms\"] > 0 and a[\"step_ms\"] != b[\"step_ms\"]))' '$tr' '$h' && ! grep -q 'has no time' '$tmp/e'" \
  "$tr // $(head -c 300 "$tmp/e")"
echo '[{"ph":"X","cat":"cpu_op","name":"aten::frobnicate","pid":1,"tid":1,"ts":0,"dur":5}]' >"$tmp/alien.json"

# A calibrated profile that lacks some of the model's nodes: named.
cat >"$tmp/partprof.json" <<'J'
{"name": "local", "host": "h", "cores": 2,
 "roofline": {"matmul_gflops": 50, "vector_gflops": 10, "mem_gbytes_per_s": 20, "launch_us": 2},
 "link": {"latency_us": 2, "gbytes_per_s": 5},
 "collectives": [{"ranks": 2, "overhead_us": 10, "ns_per_byte": 0.1}],
 "models": [{"model": "spirals", "batch": 4, "update_ns_per_byte": 1, "step_overhead_us": 5,
             "nodes": {"fc1": [3, 6], "tanh1": [1, 1]}}]}
J
"$twb" simulate "$model" --device "$tmp/partprof.json" --ranks 8 --batch 32 >/dev/null 2>"$tmp/e"
check "a profile missing nodes: they are named, the roofline stands in" \
  "grep -q 'has no time for fc2, tanh2, fc3, loss' '$tmp/e'" "$(cat "$tmp/e")"

# Chakra execution traces out and back in: the same step.
mlp=$assets/models/mlp.json
mkdir -p "$tmp/et"
a=$("$twb" simulate "$mlp" --ranks 16 --chakra-out "$tmp/et/mlp" --json 2>"$tmp/e")
b=$("$twb" simulate --chakra "$tmp/et/mlp.0.et" --ranks 16 --json 2>"$tmp/e2")
check "--chakra-out, then --chakra: one file a rank, the same step as the model's ($(ls "$tmp/et" 2>/dev/null | wc -l) files)" \
  "[ \$(ls '$tmp/et' | wc -l) -eq 16 ] && /usr/bin/python3 -c 'import json, sys; a = json.loads(sys.argv[1])[\"configs\"][0]; b = json.loads(sys.argv[2])[\"configs\"][0]; sys.exit(not (abs(a[\"step_ms\"] - b[\"step_ms\"]) <= 1e-9 * a[\"step_ms\"] and b[\"collective_nodes\"] >= 2))' '$a' '$b'" \
  "$a // $b $(head -c 300 "$tmp/e" "$tmp/e2")"
# The files as protobuf's delimited messages: metadata, then nodes whose
# dependencies name earlier nodes.
cat >"$tmp/et.py" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if not c & 0x80: return v, i
msgs, i = [], 0
while i < len(b):
    n, i = varint(b, i); msgs.append(b[i:i + n]); i += n
assert i == len(b), "trailing bytes"
def fields(m):
    out, i = [], 0
    while i < len(m):
        key, i = varint(m, i); f, w = key >> 3, key & 7
        if w == 0: v, i = varint(m, i)
        elif w == 2: n, i = varint(m, i); v = m[i:i + n]; i += n
        elif w == 1: v = m[i:i + 8]; i += 8
        elif w == 5: v = m[i:i + 4]; i += 4
        else: raise SystemExit("wire type %d" % w)
        out.append((f, v))
    return out
meta = dict(fields(msgs[0]))
assert meta[1] == b"0.0.4", meta
ids = []
for m in msgs[1:]:
    f = fields(m)
    nid = dict(f).get(1, 0); ids.append(nid)
    for k, v in f:
        if k in (4, 5):
            deps = [v] if isinstance(v, int) else []
            if isinstance(v, bytes):   # packed
                j = 0
                while j < len(v): d, j = varint(v, j); deps.append(d)
            assert all(d in ids[:-1] for d in deps), (nid, deps)
    assert dict(f).get(3) in (4, 7), "COMP_NODE or COMM_COLL_NODE"
print(len(msgs) - 1)
PY
nodes=$(/usr/bin/python3 "$tmp/et.py" "$tmp/et/mlp.0.et" 2>&1)
check "a Chakra file: GlobalMetadata then $nodes nodes, each depending on earlier ones" "[ '$nodes' -gt 10 ] 2>/dev/null" "$nodes"
head -c 40 "$tmp/et/mlp.0.et" >"$tmp/cut.et"
printf '\xff\xff\xff\x0f' >"$tmp/junk.et"

bad () {
  local what=$1 rc_want=$2 want=$3; shift 3
  "$twb" simulate "$@" >"$tmp/o" 2>"$tmp/e"
  local rc=$?
  check "$what: exit $rc_want naming it" "[ $rc -eq $rc_want ] && grep -q -e '$want' '$tmp/e' && [ ! -s '$tmp/o' ]" \
    "rc $rc: $(head -c 300 "$tmp/e")"
}
bad "an unknown mode" 2 "--mode fast: time or train" "$model" --mode fast
bad "--epochs in time mode" 2 "go with --mode train" "$model" --epochs 2
bad "--mode train with --sweep" 2 "one data-parallel configuration" "$model" --mode train --sweep ranks=8,16
bad "--async with --compress" 2 "send none to compress" "$model" --mode train --async 1 --compress int8
bad "an output that is the model" 1 "spirals.json" "$model" --mode train --ranks 2 --nodes 1 --devices-per-node 2 --save-weights "$model"
bad "a bad compressor" 2 "zip" "$model" --mode train --ranks 2 --nodes 1 --devices-per-node 2 --max-steps 2 --compress zip
bad "a trace with nothing of the model" 1 "no span of the trace maps to a node" "$model" --device "$tmp/alien.json"
bad "a Chakra file cut short" 1 "cut.et: byte" --chakra "$tmp/cut.et"
bad "not a Chakra file" 1 "junk.et" --chakra "$tmp/junk.et"
cp "$model" "$tmp/m.0.et"
bad "--chakra-out over the model" 1 "chakra-out" "$tmp/m.0.et" --chakra-out "$tmp/m" --ranks 8
bad "--chakra-out into no folder" 1 "does not exist" "$model" --chakra-out "$tmp/none/m" --ranks 8
bad "--chakra with a model" 2 "usage" "$model" --chakra "$tmp/et/mlp.0.et"
echo "1..$n"
