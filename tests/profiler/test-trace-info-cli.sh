#!/usr/bin/env bash
# test-trace-info-cli.sh TWB DATA — `twb trace-info` on the hand-written
# PyTorch-format fixture (TAP): counts, top names by total and self time and
# step statistics as computed by hand from the file; several files merged
# (one of them gzip); bad input exits non-zero naming the file and the byte.
set -u
twb=$1
data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

echo "1..9"

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
print("ok" if ok else "bad: " + json.dumps(d)[:3000])
PY
)
check "--json, two files (one gzip): figures per file and merged" '[ $st = 0 ] && [ "$verdict" = ok ]' "$verdict"

head -c 700 "$f" | sed 's/"traceEvents"/"traceEvents" ?/' > "$tmp/bad.json"
out=$("$twb" trace-info "$f" "$tmp/bad.json" 2>&1); st=$?
check "a malformed file: exit 1, the file and the byte named" '[ $st = 1 ] && grep -q "bad.json: byte [0-9]*: " <<<"$out"' "$out"
out=$("$twb" trace-info "$tmp/missing.json" 2>&1); st=$?
check "a missing file: exit 1, the file named" '[ $st = 1 ] && grep -q "missing.json: No such file" <<<"$out"' "$out"
out=$("$twb" trace-info 2>&1); st=$?
check "no file: usage, exit 2" '[ $st = 2 ] && grep -q "usage: twb trace-info" <<<"$out"' "$out"
out=$("$twb" trace-info --bogus "$f" 2>&1); st=$?
check "an unknown option: exit 2, named" '[ $st = 2 ] && grep -q "unknown option .--bogus." <<<"$out"' "$out"
exit $fail
