#!/usr/bin/env bash
# test-trace-info-cli.sh TWB DATA ASSETS TEST_RANKS — `twb trace-info` on the
# hand-written PyTorch-format fixture (TAP): counts, top names by total and
# self time, step statistics and per-rank compute / communication / idle as
# computed by hand from the file; several files merged (one of them gzip);
# on eager and compiled recordings of the MLP (`twb profile`): the layers,
# the rank and the steps against sums computed here from the files, and
# `--compare` of the two; `--peak`; bad input exits non-zero naming the
# file and the byte; a merged trace of 4 synthetic ranks (test-ranks
# --write-merged: rank 3's steps 18.75 % slower) gets the Ranks table and
# its stragglers, --straggler-threshold moves the line; two PyTorch traces
# of ranks 0 and 1 (distributedInfo.rank; rank 1's clock 1 ms ahead, its
# step 30 % longer) are merged as the ranks of one run.
set -u
twb=$1
data=$2
assets=$3
test_ranks=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

echo "1..25"

f="$data/torch-trace.json"
out=$("$twb" trace-info "$f" 2>&1); st=$?
check "trace-info on the PyTorch fixture exits 0" '[ $st = 0 ]' "$out"
check "the summary counts its events" 'grep -q "torch-trace.json: 11 slices, 3 instants, 0 counter samples, 2 flows on 6 lanes of 5 processes, 0.530 ms" <<<"$out"' "$out"
# ProfilerStep#2 lasts 500.250 µs; its children on the CPU lane: aten::linear
# 60.125, aten::relu 20, cudaMemcpyAsync 12: self 408.125 µs.
check "the step's total and self time" 'grep -Eq "^ +0\.500 +0\.408 +1  ProfilerStep#2$" <<<"$out"' "$out"
check "the step statistics" 'grep -q "steps: 1, mean 0.500 ms, median 0.500 ms, min 0.500 ms, max 0.500 ms" <<<"$out"' "$out"

gzip -c "$f" > "$tmp/copy.json.gz"
out=$("$twb" trace-info --json "$f" "$tmp/copy.json.gz" 2>&1); st=$?
verdict=$(/usr/bin/python3 - <<PY 2>&1
import json
d = json.loads('''$out''')
a, m = d["files"][0], d["merged"]
def top(x, key):
    return {e["name"]: e for e in x[key]}
t, s = top(a, "top_total"), top(a, "top_self")
ok = (len(d["files"]) == 2 and a["slices"] == 11 and a["instants"] == 3 and a["flows"] == 2
      and a["categories"]["cpu_op"] == 3 and a["categories"]["kernel"] == 2
      and a["categories"]["cuda_runtime"] == 3
      and a["top_total"][0]["name"] == "PyTorch Profiler (0)" and a["top_total"][0]["total_ns"] == 520000
      and t["aten::linear"]["self_ns"] == 20125 and t["aten::addmm"]["self_ns"] == 31500
      and s["ProfilerStep#2"]["self_ns"] == 408125
      and t["cudaLaunchKernel"]["count"] == 2 and t["cudaLaunchKernel"]["total_ns"] == 14500
      and abs(a["steps"]["median_ms"] - 0.50025) < 1e-9 and a["steps"]["count"] == 1
      and m["slices"] == 22 and m["steps"]["count"] == 2
      and top(m, "top_total")["cudaLaunchKernel"]["count"] == 4)
# Ranks, by hand from the file (µs).  GPU (pid 0): kernels 15.375 + 3,
# the memcpy 4.25 (communication), from 140 to 314.25.  CPU (pid 2417):
# aten::linear (addmm and a launch inside) 60.125, aten::relu 20,
# cudaMemcpyAsync 12 (a runtime call: compute); ProfilerStep#2 wraps them
# (not compute) and spans 100 to 600.25.
r = {x["pid"]: x for x in a["ranks"]}
ok = ok and (r[0]["span_ns"] == 174250 and r[0]["compute_ns"] == 18375 and r[0]["comm_ns"] == 4250
             and r[0]["overlap_ns"] == 0 and r[0]["idle_ns"] == 174250 - 18375 - 4250
             and r[2417]["span_ns"] == 500250 and r[2417]["compute_ns"] == 92125
             and r[2417]["comm_ns"] == 0 and r[2417]["idle_ns"] == 500250 - 92125
             and a["layers"] == [])
print("ok" if ok else "bad: " + json.dumps(d)[:3000])
PY
)
check "--json, two files (one gzip): figures per file and merged" '[ $st = 0 ] && [ "$verdict" = ok ]' "$verdict"

# Recordings of the MLP, eager and compiled (3 steps each after warm-up).
m="$assets/models/mlp.json"
"$twb" profile "$m" --steps 3 --trace "$tmp/e.json" --mode eager >/dev/null 2>&1 \
  && "$twb" profile "$m" --steps 3 --trace "$tmp/c.json.gz" --mode compiled >/dev/null 2>&1; st=$?
check "twb profile records the MLP eager and compiled" '[ $st = 0 ]'
gunzip -c "$tmp/c.json.gz" > "$tmp/c.json"
# The layers and the rank, computed here from the file: each slice naming
# nodes and not nested in another that does (the eager backward's kernels),
# its time split evenly among its nodes; the rank's compute, the union of
# every slice but the steps lane's and data loading.
cat > "$tmp/ref.py" <<'PY'
import json
def load(path):
    d = json.load(open(path))
    return [e for e in d["traceEvents"] if e["ph"] == "X"]
def ns(v):
    return round(v * 1000)
def layers(ev):
    out = {}
    by_lane = {}
    for e in ev:
        by_lane.setdefault((e["pid"], e["tid"]), []).append(e)
    for lane in by_lane.values():
        ops = [e for e in lane if e.get("args", {}).get("nodes")]
        for e in ops:
            s0, s1 = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            if any(o is not e and ns(o["ts"]) <= s0 and ns(o["ts"]) + ns(o["dur"]) >= s1
                   and ns(o["dur"]) > ns(e["dur"]) for o in ops):
                continue
            nodes = e["args"]["nodes"].split(",")
            for n in nodes:
                out[n] = out.get(n, 0) + (s1 - s0) / len(nodes)
    return out
def compute(ev):
    iv = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in ev
                if e["tid"] != 0 and e["cat"] != "data")
    total, end = 0, None
    for a, b in iv:
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total
def steps(ev):
    return [ns(e["dur"]) for e in ev if e["cat"] == "step"]
PY
"$twb" trace-info --json "$tmp/e.json" "$tmp/c.json.gz" > "$tmp/info.json" 2>&1; st=$?
verdict=$(/usr/bin/python3 - "$tmp" <<'PY' 2>&1
import json, sys
sys.path.insert(0, sys.argv[1])
from ref import *
d = json.load(open(sys.argv[1] + "/info.json"))
bad = []
for i, name in enumerate(["e.json", "c.json"]):
    ev = load(sys.argv[1] + "/" + name)
    f = d["files"][i]
    ref = layers(ev)
    got = {l["node"]: l for l in f["layers"]}
    if set(got) != set(ref):
        bad.append((name, "nodes", sorted(got), sorted(ref)))
    for n, l in got.items():
        if abs(l["total_ns"] - ref.get(n, -1e9)) > l["count"]:
            bad.append((name, n, l["total_ns"], ref.get(n)))
        if l["steps"] != 3 or l["total_ns"] != l["forward_ns"] + l["backward_ns"] + l["update_ns"] + l["other_ns"]:
            bad.append((name, n, l))
    if abs(sum(l["share"] for l in f["layers"]) - 1) > 1e-9:
        bad.append((name, "shares"))
    (r,) = f["ranks"]
    if r["compute_ns"] != compute(ev) or r["comm_ns"] != 0 or r["idle_ns"] != r["span_ns"] - r["compute_ns"]:
        bad.append((name, "rank", r, compute(ev)))
    st = steps(ev)
    if f["steps"]["count"] != 3 or abs(f["steps"]["max_ms"] - max(st) / 1e6) > 1e-9:
        bad.append((name, "steps", f["steps"], st))
print("ok" if not bad else "bad: " + repr(bad)[:3000])
PY
)
check "--json on the recordings: layers, rank, steps as computed from the files" '[ $st = 0 ] && [ "$verdict" = ok ]' "$verdict"
out=$("$twb" trace-info "$tmp/e.json" 2>&1)
check "the text shows the rank and the layers" 'grep -Eq "^ +[0-9]+ +[0-9.]+ +[0-9.]+ +0\.000 +0\.000 +[0-9.]+ +0\.0  twb profile mlp$" <<<"$out" && grep -Eq "^ +[0-9.]+( +[0-9.]+){3} +[0-9.]+ +[0-9]+ +3  fc1$" <<<"$out"' "$out"

"$twb" trace-info --json --compare "$tmp/e.json" "$tmp/c.json.gz" > "$tmp/cmp.json" 2>&1; st=$?
verdict=$(/usr/bin/python3 - "$tmp" <<'PY' 2>&1
import json, sys
sys.path.insert(0, sys.argv[1])
from ref import *
d = json.load(open(sys.argv[1] + "/cmp.json"))
e, c = load(sys.argv[1] + "/e.json"), load(sys.argv[1] + "/c.json")
le, lc = layers(e), layers(c)
rows = {r["node"]: r for r in d["rows"]}
step = d["rows"][-1]
bad = []
if d["steps_in_common"] != 3 or d["a"]["mode"] != "eager" or d["b"]["mode"] != "compiled":
    bad.append("header")
if step["node"] != "(step)" or abs(step["a_ns"] - sum(steps(e)) / 3) > 1e-3 or abs(step["b_ns"] - sum(steps(c)) / 3) > 1e-3:
    bad.append(("step", step, steps(e), steps(c)))
if set(rows) - {"(step)"} != set(le) | set(lc):
    bad.append(("nodes", sorted(rows)))
for n, r in rows.items():
    if n == "(step)":
        continue
    if abs(r["a_ns"] - le.get(n, 0) / 3) > 2 or abs(r["b_ns"] - lc.get(n, 0) / 3) > 2:
        bad.append((n, r, le.get(n), lc.get(n)))
if not rows["relu1"]["fused_b"] or rows["relu1"]["b_ns"] <= 0:
    bad.append(("relu1", rows["relu1"]))
print("ok" if not bad else "bad: " + repr(bad)[:3000])
PY
)
check "--compare --json: each layer's mean per step in A and B, the step's" '[ $st = 0 ] && [ "$verdict" = ok ]' "$verdict"
out=$("$twb" trace-info --compare "$tmp/e.json" "$tmp/c.json.gz" 2>&1); st=$?
check "--compare as text: modes, steps in common, (step) last, fused nodes marked" '[ $st = 0 ] && grep -q "^A: .*e.json (eager)$" <<<"$out" && grep -q "over the 3 steps both hold" <<<"$out" && [ "$(tail -n 1 <<<"$out" | grep -c "(step)$")" = 1 ] && grep -Eq "  relu1 \(fused in B\)$" <<<"$out"' "$out"
out=$("$twb" trace-info --compare "$tmp/e.json" 2>&1); st=$?
check "--compare with one file: usage, exit 2" '[ $st = 2 ] && grep -q "two files" <<<"$out"' "$out"
out=$("$twb" trace-info --peak 2>&1); st=$?
check "--peak: a positive GFLOP/s" '[ $st = 0 ] && grep -Eq "^peak: [0-9]*[1-9][0-9]*\.[0-9] GFLOP/s \(SGEMM, [0-9]+ threads\)$" <<<"$out"' "$out"

head -c 700 "$f" | sed 's/"traceEvents"/"traceEvents" ?/' > "$tmp/bad.json"
out=$("$twb" trace-info "$f" "$tmp/bad.json" 2>&1); st=$?
check "a malformed file: exit 1, the file and the byte named" '[ $st = 1 ] && grep -q "bad.json: byte [0-9]*: " <<<"$out"' "$out"
out=$("$twb" trace-info "$tmp/missing.json" 2>&1); st=$?
check "a missing file: exit 1, the file named" '[ $st = 1 ] && grep -q "missing.json: No such file" <<<"$out"' "$out"
out=$("$twb" trace-info 2>&1); st=$?
check "no file: usage, exit 2" '[ $st = 2 ] && grep -q "usage: twb trace-info" <<<"$out"' "$out"
out=$("$twb" trace-info --bogus "$f" 2>&1); st=$?
check "an unknown option: exit 2, named" '[ $st = 2 ] && grep -q "unknown option .--bogus." <<<"$out"' "$out"
# Names of invalid UTF-8 (an overlong NUL, an encoded surrogate, "\udc00" as
# yajl decodes it): --json prints valid UTF-8 (U+FFFD in their place), and
# the note says so.
printf '{"traceEvents":[{"ph":"X","name":"c\300\200","ts":1,"dur":2,"pid":1,"tid":1},{"ph":"X","name":"d\355\240\200","ts":1,"dur":2,"pid":1,"tid":1},{"ph":"X","name":"b\\udc00","ts":1,"dur":2,"pid":1,"tid":1}]}' > "$tmp/utf8.json"
"$twb" trace-info --json "$tmp/utf8.json" > "$tmp/utf8.out" 2>&1; st=$?
check "invalid UTF-8 in names: --json output is valid UTF-8" \
  '[ $st = 0 ] && iconv -f UTF-8 -t UTF-8 "$tmp/utf8.out" > /dev/null 2>&1 && /usr/bin/python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/utf8.out"' "$(cat "$tmp/utf8.out")"
out=$("$twb" trace-info "$tmp/utf8.json" 2>&1)
check "invalid UTF-8 in names: noted" 'grep -q "3 strings held invalid UTF-8" <<<"$out"' "$out"
# A merged trace of several ranks.
"$test_ranks" --write-merged "$tmp/ranks.json.gz"; st=$?
check "a merged trace of 4 synthetic ranks is written" '[ $st = 0 ]'
out=$("$twb" trace-info "$tmp/ranks.json.gz" 2>&1); st=$?
check "the Ranks table: a row per rank, its clock, rank 3 the straggler" \
  '[ $st = 0 ] && grep -q "^  Ranks (4; " <<<"$out" && [ "$(grep -Ec "^ +[0-3]( +[0-9.]+){6} +40 +(reference|refined)  rank [0-3] \(node-[0-3]\)$" <<<"$out")" = 4 ] && grep -q "^  stragglers (median step more than 10% above the ranks. median, 8.000 ms): rank 3 (+18.8%)$" <<<"$out"' "$out"
"$twb" trace-info --json "$tmp/ranks.json.gz" > "$tmp/ranks.out" 2>&1; st=$?
verdict=$(/usr/bin/python3 - "$tmp/ranks.out" <<'PY' 2>&1
import json, sys
f = json.load(open(sys.argv[1]))["files"][0]
rows = f["rank_stats"]
base = {r["pid"]: r for r in f["ranks"]}
bad = []
if f["n_ranks"] != 4 or f["stragglers"] != [3] or f["straggler_threshold_pct"] != 10 or abs(f["median_step_ns"] - 8000000) > 2000:
    bad.append(("head", {k: f.get(k) for k in ("n_ranks", "stragglers", "median_step_ns")}))
for r in rows:
    b = base[r["rank"]]
    # exposed: the communication no compute covers; overlap % = 1 - exposed / comm
    if (r["exposed_ns"] != b["comm_ns"] - b["overlap_ns"] or r["compute_ns"] != b["compute_ns"]
            or r["idle_ns"] != b["idle_ns"]
            or abs(r["overlap_pct"] - 100 * (1 - r["exposed_ns"] / r["comm_ns"])) > 1e-9
            or r["steps"] != 40 or abs(r["step_median_ns"] - (9500000 if r["rank"] == 3 else 8000000)) > 2000
            or r["straggler"] != (r["rank"] == 3) or r["clock"] != ("reference" if r["rank"] == 0 else "refined")):
        bad.append(r)
print("ok" if not bad else "bad: " + repr(bad)[:3000])
PY
)
check "--json on the merged trace: rank_stats against the ranks' figures, stragglers" '[ $st = 0 ] && [ "$verdict" = ok ]' "$verdict"
out=$("$twb" trace-info --straggler-threshold 20 "$tmp/ranks.json.gz" 2>&1); st=$?
check "--straggler-threshold 20: no straggler" '[ $st = 0 ] && grep -q "^  stragglers (median step more than 20% above the ranks. median, 8.000 ms): none$" <<<"$out"' "$out"
out=$("$twb" trace-info --straggler-threshold 5abc "$tmp/ranks.json.gz" 2>&1); st=$?
check "--straggler-threshold 5abc: exit 2, the option and the value named" '[ $st = 2 ] && grep -q "^twb: --straggler-threshold: .5abc. is not valid" <<<"$out"' "$out"
/usr/bin/python3 - "$f" "$tmp" <<'PY'
import copy, json, sys
d = json.load(open(sys.argv[1]))
for rank in (0, 1):
    r = copy.deepcopy(d)
    r["distributedInfo"]["rank"] = rank
    shift = 1000.0 * rank                    # rank 1's clock runs 1 ms ahead
    for e in r["traceEvents"]:
        if isinstance(e.get("ts"), float):
            e["ts"] += shift
        if e.get("name") == "ProfilerStep#2" and rank == 1:
            e["dur"] = 650.325
    # Three NCCL all-reduces on stream 7, ending at the same true instant
    # on both ranks, rank 1 arriving later.
    for seq in (1, 2, 3):
        start = 1700000000400.0 + 10 * seq + (3 if rank else 0) + shift
        end = 1700000000400.0 + 10 * seq + 8 + shift
        r["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                                 "pid": 0, "tid": 7, "ts": start, "dur": end - start,
                                 "args": {"Collective name": "allreduce", "Seq": seq, "In msg nelems": 1024,
                                          "Group size": 2, "dtype": "Float"}})
    json.dump(r, open("%s/rank%d.json" % (sys.argv[2], rank), "w"))
PY
out=$("$twb" trace-info "$tmp/rank1.json" "$tmp/rank0.json" 2>&1); st=$?
check "two PyTorch ranks' traces: merged by distributedInfo.rank, the clock refined, rank 1 the straggler" \
  '[ $st = 0 ] && grep -q "^merged (2 files, a rank each by distributedInfo.rank): .* of 2 processes" <<<"$out" && grep -q "^  Ranks (2; " <<<"$out" && grep -Eq "^ +1( +[0-9.]+){4} +[0-9.]+ +0\.650 +1 +refined  rank 1$" <<<"$out" && grep -q "stragglers (.*): rank 1 (+13.0%)$" <<<"$out"' "$out"
"$twb" trace-info --json "$tmp/rank0.json" "$tmp/rank1.json" > "$tmp/torch-ranks.out" 2>&1; st=$?
verdict=$(/usr/bin/python3 - "$tmp/torch-ranks.out" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
m = d["merged"]
ok = (d["merged_by_rank"] and m["n_ranks"] == 2 and m["stragglers"] == [1] and m["processes"] == 2
      and [r["clock"] for r in m["rank_stats"]] == ["reference", "refined"]
      and all(r["comm_ns"] > 0 for r in m["rank_stats"]) and d["files"][0]["n_ranks"] == 1
      and "rank_stats" not in d["files"][0])
print("ok" if ok else "bad: " + json.dumps(m)[:3000])
PY
)
check "--json: merged_by_rank, the merged trace's rank_stats" '[ $st = 0 ] && [ "$verdict" = ok ]' "$verdict"
exit $fail
