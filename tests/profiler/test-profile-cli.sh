#!/usr/bin/env bash
# test-profile-cli.sh TWB ASSETS — `twb profile` as a user runs it (TAP):
# the trace it writes is Chrome trace JSON with the steps and ops recorded,
# gzip output decompresses to the same kind of file, and bad input exits
# non-zero naming the file.
set -u
twb=$1
assets=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

echo "1..12"

m="$assets/models/spirals.json"
out=$("$twb" profile "$m" --steps 3 --trace "$tmp/t.json" 2>&1); st=$?
check "profile spirals exits 0" '[ $st = 0 ]' "$out"
check "the summary names the file and the steps" 'grep -q "t.json: [0-9]* events, 3 steps, [0-9.]* ms recorded" <<<"$out"' "$out"
# The file: traceEvents with 3 step slices, forward slices for every
# computing node, thread names, metadata naming the model; counters (loss,
# samples/s, tensor memory); flops and bytes as JSON numbers; a flow from
# each backward op to each of its kernels (s on the op's start, f on the
# kernel's).
verdict=$(/usr/bin/python3 - "$tmp/t.json" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
steps = [e for e in x if e["cat"] == "step"]
fwd = set()
for e in x:
    if e["cat"] == "forward":
        fwd.update(e["args"]["nodes"].split(","))
names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
rates = [e["args"]["samples/s"] for e in ev if e["ph"] == "C" and e["name"] == "samples/s"]
losses = [e["args"]["loss"] for e in ev if e["ph"] == "C" and e["name"] == "loss"]
mem = [e["args"]["tensor memory"] for e in ev if e["ph"] == "C" and e["name"] == "tensor memory"]
numbers = all(isinstance(e["args"]["flops"], (int, float)) and isinstance(e["args"]["bytes"], (int, float))
              for e in x if e["cat"] in ("forward", "backward", "update"))
kernels = {(e["tid"], e["ts"]) for e in x if e["cat"] == "kernel"}
backward = {(e["tid"], e["ts"]) for e in x if e["cat"] == "backward"}
s_ev = {e["id"]: (e["tid"], e["ts"]) for e in ev if e["ph"] == "s"}
f_ev = {e["id"]: (e["tid"], e["ts"]) for e in ev if e["ph"] == "f"}
flows = (len(kernels) > 0 and len(s_ev) == len(kernels) and set(s_ev) == set(f_ev)
         and all(v in backward for v in s_ev.values()) and set(f_ev.values()) == kernels)
ok = (len(steps) == 3 and len(mem) >= 3 and all(v > 0 for v in mem) and numbers and flows and {"fc1", "tanh1", "fc2", "loss"} <= fwd and "steps" in names
      and d["metadata"]["model"] == "spirals" and d["metadata"]["mode"] == "eager"
      and d["displayTimeUnit"] == "ns" and all(e["dur"] >= 0 for e in x)
      and len(rates) == 3 and all(r > 0 for r in rates) and len(losses) == 3 and all(0 < l < 10 for l in losses))
print("ok" if ok else "bad: steps %d fwd %s names %s meta %s rates %s losses %s mem %d numbers %s flows %s"
      % (len(steps), sorted(fwd), names, d["metadata"], rates, losses, len(mem), numbers, flows))
PY
)
check "the trace is Chrome JSON with 3 steps, every node's forward, loss and samples/s counters" '[ "$verdict" = ok ]' "$verdict"

out=$("$twb" profile "$m" --steps 2 --warmup 0 --mode compiled --trace "$tmp/t.json.gz" 2>&1); st=$?
check "compiled, gzip output exits 0" '[ $st = 0 ]' "$out"
verdict=$(/usr/bin/python3 -c "
import gzip, json, sys
d = json.loads(gzip.open(sys.argv[1]).read())
print('ok' if len([e for e in d['traceEvents'] if e.get('cat') == 'step']) == 2 and d['metadata']['mode'] == 'compiled' else 'bad')" "$tmp/t.json.gz" 2>&1)
check ".gz output is gzip-compressed trace JSON" '[ "$verdict" = ok ]' "$verdict"

out=$("$twb" profile "$tmp/missing.json" --steps 3 --trace "$tmp/u.json" 2>&1); st=$?
check "a missing model exits 1" '[ $st = 1 ]' "$out"
check "... naming the model file" 'grep -q "missing.json" <<<"$out"' "$out"
check "... and writes no trace" '[ ! -e "$tmp/u.json" ]'

out=$("$twb" profile "$m" --steps 3 --trace "$tmp/no/such/dir/t.json" 2>&1); st=$?
check "an unwritable trace path exits 1" '[ $st = 1 ]' "$out"
check "... naming the trace file" 'grep -q "no/such/dir/t.json" <<<"$out"' "$out"

out=$("$twb" profile "$m" --steps 0 --trace "$tmp/v.json" 2>&1); st=$?
check "--steps 0 is a usage error" '[ $st = 2 ] && grep -q -- "--steps" <<<"$out"' "$out"
out=$("$twb" profile "$m" --steps 3 --trace "$m" 2>&1); st=$?
check "--trace over the model is refused" '[ $st = 1 ] && cmp -s "$m" "$assets/models/spirals.json"' "$out"

exit $fail
