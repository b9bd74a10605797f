#!/usr/bin/env bash
# test-simulate.sh TWB ASSETS — twb simulate as a user runs it (TAP): one
# configuration and a sweep, text and JSON; the fast path equals --exact;
# the step grows with ranks; hierarchical beats a flat ring where latency
# rules; topology files and bad requests are refused naming what is wrong.
set -u
twb=$(realpath "$1")
assets=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
fail () { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check () { if eval "$2"; then ok "$1"; else fail "$1" "${3:-}"; fi; }
py () { /usr/bin/python3 -c "$@"; }
model=$assets/models/mlp.json

out=$("$twb" simulate "$model" --sweep ranks=8,64,512 --json 2>"$tmp/e")
check "--sweep --json: one object, three configurations, each with its figures" \
  "py 'import json, sys; d = json.loads(sys.argv[1]); c = d[\"configs\"]; sys.exit(not (len(c) == 3 and [x[\"ranks\"] for x in c] == [8, 64, 512] and all(x[\"step_ms\"] > 0 and 0 < x[\"scaling_efficiency\"] <= 1.0001 and x[\"memory_per_device\"][\"total\"] > 0 and x[\"busiest_link\"] for x in c)))' '$out'" \
  "$out $(head -c 300 "$tmp/e")"
check "--sweep: the step grows with the ranks (the ring's latency term)" \
  "py 'import json, sys; c = json.loads(sys.argv[1])[\"configs\"]; sys.exit(not (c[0][\"step_ms\"] < c[1][\"step_ms\"] < c[2][\"step_ms\"]))' '$out'"

a=$("$twb" simulate "$model" --ranks 16 --topology pcie+eth --algo ring --json 2>/dev/null)
b=$("$twb" simulate "$model" --ranks 16 --topology pcie+eth --algo ring --json --exact 2>/dev/null)
check "--exact: every message simulated gives the same step" \
  "py 'import json, sys; a, b = (json.loads(x)[\"configs\"][0] for x in sys.argv[1:]); sys.exit(not all(abs(a[k] - b[k]) <= 1e-9 * abs(b[k]) + 1e-12 for k in (\"step_ms\", \"exposed_comm_ms\", \"comm_ms\")))' '$a' '$b'" "$a // $b"
h=$("$twb" simulate "$model" --ranks 64 --topology pcie+eth --algo hier --json 2>/dev/null)
r=$("$twb" simulate "$model" --ranks 64 --topology pcie+eth --algo ring --json 2>/dev/null)
check "pcie+eth, 64 ranks: hierarchical all-reduce beats a flat ring" \
  "py 'import json, sys; h, r = (json.loads(x)[\"configs\"][0][\"comm_ms\"] for x in sys.argv[1:]); sys.exit(not h < r)' '$h' '$r'"
text=$("$twb" simulate "$model" --ranks 8 2>&1)
check "text: a header and one row" \
  "echo \"\$text\" | grep -q 'step ms' && [ \$(echo \"\$text\" | grep -c '^ *8 ') -eq 1 ]" "$text"

# A topology file: two devices, one switch.
cat >"$tmp/two.json" <<'J'
{"vertices": [{"name": "g0", "device": true}, {"name": "g1", "device": true}, {"name": "sw"}],
 "links": [{"a": "g0", "b": "sw", "kind": "nvlink"}, {"a": "g1", "b": "sw", "kind": "nvlink", "gbytes_per_s": 100}]}
J
f=$("$twb" simulate "$model" --topology "$tmp/two.json" --json 2>"$tmp/e")
check "--topology FILE: its devices are the ranks" \
  "py 'import json, sys; c = json.loads(sys.argv[1])[\"configs\"][0]; sys.exit(not c[\"ranks\"] == 2)' '$f'" "$f $(cat "$tmp/e")"

# Calibrated on this machine: a profile of the model's nodes and the MPI
# links, predictions from it, and --check's real run beside them (the
# error is printed, never asserted: these cores are shared).
export XDG_DATA_HOME=$tmp/data
export OMPI_MCA_rmaps_base_oversubscribe=1
if command -v mpirun >/dev/null; then
  "$twb" simulate "$model" --calibrate >"$tmp/cal.out" 2>"$tmp/cal.err"
  rc=$?
  prof=$tmp/data/twb/sim/local.json
  check "--calibrate: exit 0, the local profile with the model (its 2- and 4-rank lockstep too), a link and 2- and 4-rank collectives" \
    "[ $rc -eq 0 ] && py 'import json, sys; p = json.load(open(sys.argv[1])); sys.exit(not (p[\"link\"][\"gbytes_per_s\"] > 0 and sorted(c[\"ranks\"] for c in p[\"collectives\"]) == [2, 4] and any(m[\"model\"] == \"mlp\" and m[\"batch\"] == 64 and len(m[\"nodes\"]) >= 5 and sorted(l[\"ranks\"] for l in m[\"lockstep\"]) == [2, 4] and all(l[\"compute_scale\"] > 0 and l[\"wait_us\"] >= 0 for l in m[\"lockstep\"]) for m in p[\"models\"])))' '$prof'" \
    "rc $rc: $(cat "$tmp/cal.out" "$tmp/cal.err" | head -c 600)"
  l=$("$twb" simulate "$model" --device local --ranks 2 --check --json 2>"$tmp/e")
  check "--device local --check: a prediction and the median of 3 real runs' median steps, with their spread" \
    "py 'import json, math, sys; c = json.loads(sys.argv[1])[\"configs\"][0]; sys.exit(not (c[\"step_ms\"] > 0 and c[\"measured_runs\"] == 3 and 0 < c[\"measured_lowest_ms\"] <= c[\"measured_step_ms\"] <= c[\"measured_highest_ms\"] and math.isfinite(c[\"error\"])))' '$l'" \
    "$l $(head -c 300 "$tmp/e")"
  echo "# calibrated prediction at 2 ranks: $(echo "$l" | py 'import json, sys; c = json.loads(sys.stdin.read())["configs"][0]; print("%.3f ms predicted, %.3f ms measured" % (c["step_ms"], c["measured_step_ms"]))' 2>/dev/null)"
  echo '{"cores": 2, "link": {"latency_us": -1, "gbytes_per_s": 1}}' >"$tmp/badprof.json"
  "$twb" simulate "$model" --device "$tmp/badprof.json" >/dev/null 2>"$tmp/e"
  check "a profile with a negative latency: refused naming the file and the member" \
    "grep -q 'badprof.json: link: \"latency_us\"' '$tmp/e'" "$(cat "$tmp/e")"
else
  ok "# SKIP calibration: Open MPI's mpirun is not installed"
fi
XDG_DATA_HOME=$tmp/nowhere "$twb" simulate "$model" --device local >/dev/null 2>"$tmp/e"
check "--device local before any calibration: says how to make it" \
  "grep -q 'local.json' '$tmp/e' && grep -q -e '--calibrate' '$tmp/e'" "$(cat "$tmp/e")"

bad () {
  local what=$1 rc_want=$2 want=$3; shift 3
  "$twb" simulate "$@" >"$tmp/o" 2>"$tmp/e"
  local rc=$?
  check "$what: exit $rc_want naming it" "[ $rc -eq $rc_want ] && grep -q -e '$want' '$tmp/e' && [ ! -s '$tmp/o' ]" \
    "rc $rc: $(head -c 300 "$tmp/e")"
}
echo '{"vertices": [{"name": "g0", "device": true}, {"name": "sw"}], "links": [{"a": "g0", "b": "sw", "gbytes_per_s": 0}]}' >"$tmp/zero.json"
echo '{"vertices": [{"name": "g0", "device": true}, {"name": "g1", "device": true}], "links": []}' >"$tmp/apart.json"
echo '{"vertices": [' >"$tmp/broken.json"
bad "a link without bandwidth" 1 "link g0–sw: a bandwidth above 0" "$model" --topology "$tmp/zero.json"
bad "a disconnected topology" 1 "disconnected: device g1" "$model" --topology "$tmp/apart.json"
bad "a malformed topology file" 1 "broken.json" "$model" --topology "$tmp/broken.json"
bad "ranks not a multiple of the devices per node" 2 "not a multiple of --devices-per-node 8" "$model" --ranks 12
bad "an unknown device" 2 "device tpu: unknown" "$model" --device tpu
bad "an unknown topology" 2 "topology token-ring: unknown" "$model" --topology token-ring
bad "a batch that does not fit" 1 "does not fit at 8 ranks" "$model" --ranks 8 --batch 400000000
bad "a bad sweep" 2 "expected ranks=" "$model" --sweep nodes=4
bad "a model that is not there" 1 "missing.json" "$tmp/missing.json"
bad "--calibrate of a datasheet device" 2 "into the \"local\" profile" "$model" --calibrate --device h100
# --trace: the simulated step as a Chrome trace the profiler opens; one
# process per written rank (a few in the fast mode, with a note; every one
# with --exact); the main threads' spans sum to the printed compute, the
# communication lanes' to the printed communication.
cat >"$tmp/spans.py" <<'P'
import json, sys
t = json.load(open(sys.argv[1])); c = json.loads(sys.argv[2])["configs"][0]; want = int(sys.argv[3])
ev = t["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
assert sorted(procs) == list(range(want)) and all(procs[p] == "rank %d" % p for p in procs), procs
for p in procs:
    xs = [e for e in ev if e["ph"] == "X" and e["pid"] == p]
    comp = sum(e["dur"] for e in xs if lanes[(p, e["tid"])] == "main") / 1e3
    comm = sum(e["dur"] for e in xs if lanes[(p, e["tid"])] == "communication") / 1e3
    coll = [e for e in xs if e.get("cat") == "collective"]
    assert all(k in e["args"] for e in coll for k in ("kind", "algo", "seq", "bytes", "what")), coll[:1]
    assert [int(e["args"]["seq"]) for e in sorted(coll, key=lambda e: e["ts"])] == list(range(1, len(coll) + 1))
    assert any(e.get("cat") == "forward" for e in xs) and any(e.get("cat") == "backward" for e in xs)
    # ts and dur are written to the nanosecond: one per span at most.
    assert abs(comp - c["compute_ms"]) <= 1e-6 * len(xs) + 1e-9 * c["compute_ms"], (comp, c["compute_ms"])
    # The printed communication is rank 0's (ranks on other nodes of a
    # ring start its steps at other times).
    assert p > 0 or abs(comm - c["comm_ms"]) <= 1e-6 * len(xs) + 1e-9 * c["comm_ms"], (comm, c["comm_ms"])
note = t["metadata"].get("sim.note", "")
assert ("summarised" in note) == (want < int(t["metadata"]["sim.ranks"])), note
P
j=$("$twb" simulate "$model" --ranks 16 --topology pcie+eth --bucket-mb 0.1 --trace "$tmp/sim.json" --json 2>"$tmp/e")
check "--trace: 4 of 16 ranks written, a note that ranks were summarised, spans summing to the printed times" \
  "py \"\$(cat '$tmp/spans.py')\" '$tmp/sim.json' '$j' 4 2>'$tmp/pe'" "$(cat "$tmp/e" "$tmp/pe" 2>/dev/null | head -c 600)"
j=$("$twb" simulate "$model" --ranks 16 --topology pcie+eth --bucket-mb 0.1 --exact --trace "$tmp/simx.json" --json 2>"$tmp/e")
check "--trace --exact: every rank written, spans summing to the printed times" \
  "py \"\$(cat '$tmp/spans.py')\" '$tmp/simx.json' '$j' 16 2>'$tmp/pe'" "$(cat "$tmp/e" "$tmp/pe" 2>/dev/null | head -c 600)"
info=$("$twb" trace-info "$tmp/sim.json" 2>&1)
check "--trace: the profiler's reader opens it (twb trace-info)" "[ $? -eq 0 ]" "$(echo "$info" | head -c 400)"
cp "$model" "$tmp/m.json"
bad "--trace over the model" 2 "--trace" "$tmp/m.json" --trace "$tmp/m.json"
bad "--trace over the topology" 2 "--trace" "$model" --topology "$tmp/two.json" --trace "$tmp/two.json"
bad "--trace with --sweep" 2 "one configuration" "$model" --sweep ranks=8,16 --trace "$tmp/t.json"
# --parallel pipeline / hybrid: the bubble, 1F1B holding fewer
# micro-batches' activations than GPipe; the options refused as twb train
# refuses them.
a=$("$twb" simulate "$model" --parallel pipeline --stages 4 --micro-batches 8 --batch 1024 --json 2>"$tmp/e")
b=$("$twb" simulate "$model" --parallel pipeline --stages 4 --micro-batches 8 --batch 1024 --schedule gpipe --json 2>>"$tmp/e")
check "--parallel pipeline: 4 stages, a bubble, 1F1B holding 4 micro-batches to GPipe's 8 and less activation memory" \
  "py 'import json, sys; a, b = (json.loads(x) for x in sys.argv[1:]); sys.exit(not (a[\"stages\"] == 4 and a[\"replicas\"] == 1 and 0 < a[\"bubble\"] < 1 and a[\"peak_micro_batches_held\"] == 4 and b[\"peak_micro_batches_held\"] == 8 and a[\"memory_per_device\"][\"activations\"] < b[\"memory_per_device\"][\"activations\"]))' '$a' '$b'" \
  "$a // $b $(head -c 300 "$tmp/e")"
h=$("$twb" simulate "$model" --parallel hybrid --stages 2 --ranks 8 --json 2>"$tmp/e")
check "--parallel hybrid: 4 replicas of 2 stages" \
  "py 'import json, sys; h = json.loads(sys.argv[1]); sys.exit(not (h[\"replicas\"] == 4 and h[\"stages\"] == 2 and h[\"step_ms\"] > h[\"pipeline_ms\"] > 0))' '$h'" "$h $(head -c 300 "$tmp/e")"
bad "--stages without a pipeline" 2 "goes with --parallel pipeline" "$model" --stages 2
bad "--parallel pipeline with stages other than the ranks" 2 "one stage per rank" "$model" --parallel pipeline --stages 3 --ranks 4
bad "an unknown schedule" 2 "unknown schedule" "$model" --parallel hybrid --schedule zigzag
bad "--parallel pipeline with --sweep" 2 "one configuration" "$model" --parallel pipeline --sweep ranks=2,4
# ZeRO-1, local SGD, compression: the memory, the amortised averaging,
# the payload; the combinations twb train refuses are refused.
a=$("$twb" simulate "$model" --ranks 16 --json 2>"$tmp/e")
z=$("$twb" simulate "$model" --ranks 16 --shard-optimizer --json 2>>"$tmp/e")
check "--shard-optimizer: the optimizer state a device holds is 1/16" \
  "py 'import json, sys; a, z = (json.loads(x)[\"configs\"][0][\"memory_per_device\"][\"optimizer\"] for x in sys.argv[1:]); sys.exit(not abs(z - a / 16) <= 1e-9 * a)' '$a' '$z'" "$a // $z $(head -c 300 "$tmp/e")"
l2=$("$twb" simulate "$model" --ranks 16 --local-sgd 2 --json 2>>"$tmp/e")
l8=$("$twb" simulate "$model" --ranks 16 --local-sgd 8 --json 2>>"$tmp/e")
check "--local-sgd: less communication a step at H = 8 than at H = 2, both less than synchronous" \
  "py 'import json, sys; a, b, c = (json.loads(x)[\"configs\"][0][\"comm_ms\"] for x in sys.argv[1:]); sys.exit(not c < b < a)' '$a' '$l2' '$l8'" "$l2 // $l8"
sg=$("$twb" simulate "$model" --ranks 4 --compress sign --json 2>>"$tmp/e")
d4=$("$twb" simulate "$model" --ranks 4 --json 2>>"$tmp/e")
check "--compress sign at 4 ranks: fewer bytes on the busiest link" \
  "py 'import json, sys; s, d = (json.loads(x)[\"configs\"][0][\"busiest_link_bytes\"] for x in sys.argv[1:]); sys.exit(not s < d)' '$sg' '$d4'" "$sg // $d4"
bad "--compress with --local-sgd" 2 "--compress compresses the gradients of synchronous training" "$model" --compress sign --local-sgd 4
bad "--shard-optimizer with --compress" 2 "does not go with --compress" "$model" --shard-optimizer --compress int8
bad "--shard-optimizer with a pipeline" 2 "shard-optimizer" "$model" --shard-optimizer --parallel hybrid
bad "--compress powersgd" 2 "not modelled yet" "$model" --compress powersgd:2
bad "--compress with --exact" 2 "fast simulation only" "$model" --compress sign --exact
# --async: a parameter server (the last rank) whose link carries every
# worker's push and pull: 2 (p − 1) gradients a step.
for r in 4 16; do
  j=$("$twb" simulate "$model" --ranks $r --devices-per-node 1 --topology pcie+eth --async 2 --json 2>"$tmp/e")
  check "--async at $r ranks: the server's link carries 2 × $((r - 1)) gradients a step" \
    "py 'import json, sys; c = json.loads(sys.argv[1])[\"configs\"][0]; sys.exit(not abs(c[\"busiest_link_bytes\"] - 2 * ($r - 1) * c[\"grad_bytes_per_rank\"]) <= 1e-9 * c[\"busiest_link_bytes\"])' '$j'" "$j $(head -c 300 "$tmp/e")"
done
bad "--async with one rank" 2 "needs --ranks 2 or more" "$model" --ranks 1 --async 1
bad "--async with --local-sgd" 2 "two update strategies" "$model" --async 1 --local-sgd 2
bad "--async with --trace" 2 "not with --trace" "$model" --async 1 --trace "$tmp/a.json"
# Ranks not alike.  Synchronous: the step waits for the slowest, so a
# straggler of 3 lengthens it; through a parameter server a lasting
# straggler sets the pace at K = 0 and K = 4 alike, while a bound of 0
# waits on every round's slowest jittered draw, which K = 4 absorbs.
s1=$("$twb" simulate "$model" --ranks 16 --json 2>"$tmp/e")
s3=$("$twb" simulate "$model" --ranks 16 --straggler 3 --json 2>>"$tmp/e")
check "--straggler 3: 3 times the compute, a step longer by more than the compute, the options in the JSON" \
  "py 'import json, sys; a, b = (json.loads(x) for x in sys.argv[1:]); x, y = a[\"configs\"][0], b[\"configs\"][0]; sys.exit(not (abs(y[\"compute_ms\"] - 3 * x[\"compute_ms\"]) <= 0.01 * y[\"compute_ms\"] and y[\"step_ms\"] > x[\"step_ms\"] + x[\"compute_ms\"] and b[\"straggler\"] == 3 and a[\"straggler\"] == 1 and b[\"jitter\"] == 0))' '$s1' '$s3'" "$s1 // $s3 $(head -c 300 "$tmp/e")"
j0=$("$twb" simulate "$assets/models/lenet5.json" --ranks 16 --async 0 --jitter 0.5 --seed 3 --json 2>"$tmp/e")
j4=$("$twb" simulate "$assets/models/lenet5.json" --ranks 16 --async 4 --jitter 0.5 --seed 3 --json 2>>"$tmp/e")
j4b=$("$twb" simulate "$assets/models/lenet5.json" --ranks 16 --async 4 --jitter 0.5 --seed 3 --json 2>>"$tmp/e")
check "--async --jitter 0.5 (LeNet-5, compute-bound): K = 4 absorbs what K = 0 waits for; the same seed, the same figures" \
  "py 'import json, sys; a, b, c = (json.loads(x)[\"configs\"][0][\"step_ms\"] for x in sys.argv[1:]); sys.exit(not (b < a and b == c))' '$j0' '$j4' '$j4b'" "$j0 // $j4 $(head -c 300 "$tmp/e")"
out=$("$twb" simulate "$model" --ranks 16 --async 2 --straggler 2 2>"$tmp/e")
check "--straggler: the header says which rank is slower" \
  "grep -q 'the last worker 2× slower' <<<\"\$out\"" "$out $(head -c 300 "$tmp/e")"
bad "--straggler below 1" 2 "--straggler" "$model" --straggler 0.5
bad "--jitter not a number" 2 "--jitter" "$model" --jitter x
bad "--jitter in train mode" 2 "not with --mode train" "$model" --mode train --ranks 2 --jitter 0.1
bad "--straggler with --check" 2 "not with --check" "$model" --ranks 2 --device local --straggler 2 --check
# A pipeline's trace: one process per stage of replica 0, sends and
# receives on the communication lanes; the profiler's reader opens it.
"$twb" simulate "$model" --parallel pipeline --stages 2 --micro-batches 4 --batch 256 --trace "$tmp/pipe.json" >/dev/null 2>"$tmp/e"
check "--parallel pipeline --trace: 2 processes, 4 forwards and 4 backwards each, sends and receives" \
  "py 'import json, sys; ev = json.load(open(sys.argv[1]))[\"traceEvents\"]; x = [e for e in ev if e[\"ph\"] == \"X\"]; sys.exit(not (sorted({e[\"pid\"] for e in x}) == [0, 1] and all(sum(1 for e in x if e[\"pid\"] == p and e.get(\"cat\") == c) == 4 for p in (0, 1) for c in (\"forward\", \"backward\")) and {e[\"args\"][\"kind\"] for e in x if e.get(\"cat\") == \"collective\"} == {\"send\", \"recv\"}))' '$tmp/pipe.json' && '$twb' trace-info '$tmp/pipe.json' >/dev/null" \
  "$(head -c 300 "$tmp/e")"
echo "1..$n"
