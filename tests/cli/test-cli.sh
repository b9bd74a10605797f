#!/usr/bin/env bash
# test-cli.sh TWB ASSETS — the twb command line as a user runs it (TAP).
# Checks exit statuses, the --json contract, resume giving byte-identical
# checkpoints, and that bad input gets a message naming the file and leaves
# the user's files unchanged.
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
json_get () { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1'])"; }

echo "1..34"

out=$("$twb" info "$assets/models/lenet5.json" 2>&1); st=$?
check "info lenet5 exits 0" '[ $st = 0 ]' "$out"
check "info lenet5 counts 61706 parameters" 'grep -q "total: 61706 parameters" <<<"$out"' "$out"

out=$("$twb" train "$assets/models/spirals.json" --max-steps 40 --json -q 2>&1); st=$?
check "train spirals --json exits 0" '[ $st = 0 ]' "$out"
steps=$(json_get steps <<<"$out" 2>/dev/null)
check "--json reports the steps run" '[ "$steps" = 40 ]' "$out"
keys_ok=$(/usr/bin/python3 -c "
import json,sys
d=json.loads(sys.stdin.read().strip().splitlines()[-1])
need=['train_loss','test_accuracy','steps','median_step_ms','mean_step_ms','samples_per_s','peak_rss_bytes']
print(all(k in d for k in need) and d['median_step_ms'] > 0 and 0 <= d['test_accuracy'] <= 1)" <<<"$out" 2>/dev/null)
check "--json has every documented key" '[ "$keys_ok" = True ]' "$out"

# Resume: 12 steps straight vs 6 + 6 resumed give the same checkpoint, byte
# for byte, on one GEMM kernel (TWB_GEMM=ours: chosen by measurement, the
# kernel of a shape may change between processes while its choice settles).
m="$assets/models/mlp.json"
TWB_GEMM=ours "$twb" train "$m" --data fashion-mnist-subset --max-steps 12 --no-eval -q --checkpoint "$tmp/a.st" >/dev/null 2>&1
TWB_GEMM=ours "$twb" train "$m" --data fashion-mnist-subset --max-steps 6 --no-eval -q --checkpoint "$tmp/b.st" >/dev/null 2>&1
TWB_GEMM=ours "$twb" train "$m" --data fashion-mnist-subset --max-steps 12 --no-eval -q --resume "$tmp/b.st" --checkpoint "$tmp/b.st" >/dev/null 2>&1
check "resumed run gives a byte-identical checkpoint" 'cmp -s "$tmp/a.st" "$tmp/b.st"'
out=$("$twb" eval "$m" --weights "$tmp/a.st" --data fashion-mnist-subset --json 2>&1); st=$?
check "eval with the checkpoint exits 0" '[ $st = 0 ]' "$out"

# Compiled mode: the same losses as eager (bitwise today; 1e-6 relative allowed).
le=$("$twb" train "$m" --data fashion-mnist-subset --max-steps 15 --no-eval -q --json | json_get train_loss)
lc=$("$twb" train "$m" --data fashion-mnist-subset --max-steps 15 --no-eval -q --json --mode compiled | json_get train_loss)
close=$(/usr/bin/python3 -c "print(abs($le - $lc) <= 1e-6 * abs($le))" 2>/dev/null)
check "compiled training matches eager ($le vs $lc)" '[ "$close" = True ]'
out=$("$twb" compile "$m" --json 2>&1); st=$?
ok_report=$(/usr/bin/python3 -c "
import json,sys
d=json.loads(sys.stdin.read())
print(d['updates'] == 6 and d['arena_bytes'] > 0 and d['eager_peak_bytes'] > d['arena_bytes'] and len(d['passes']) >= 5)" <<<"$out" 2>/dev/null)
check "compile --json reports passes, updates and memory" '[ $st = 0 ] && [ "$ok_report" = True ]' "$out"
# Three random 1x28x28 images as a v1.0 .npy, written without numpy (the
# format: magic, version, header length, a dict literal, raw little-endian data).
/usr/bin/python3 -c "
import random, struct
random.seed(0)
hdr = \"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 1, 28, 28), }\"
hdr += ' ' * (63 - (10 + len(hdr)) % 64) + chr(10)
data = struct.pack('<%df' % (3 * 784), *[random.random() for _ in range(3 * 784)])
open('$tmp/x.npy', 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode() + data)"
pc=$("$twb" predict "$m" --weights "$tmp/a.st" --input "$tmp/x.npy" --json 2>&1)
pe=$("$twb" predict "$m" --weights "$tmp/a.st" --input "$tmp/x.npy" --json --mode eager --output "$tmp/o.npy" 2>&1)
check "predict: compiled and eager agree" '[ -n "$pc" ] && [ "$pc" = "$pe" ] && grep -q predictions <<<"$pc"' "$pc / $pe"
check "predict --output writes a .npy" '[ -s "$tmp/o.npy" ] && head -c 6 "$tmp/o.npy" | grep -q NUMPY'
out=$("$twb" predict "$m" --weights "$tmp/a.st" --input "$tmp/trunc.json" 2>&1); st=$?
check "predict: a bad input file is named" '[ $st = 1 ] && grep -q "trunc.json" <<<"$out"' "$out"

# Bad input: messages name the file (and node); the files are left as they were.
printf '{"format": "twb-model", "version": 1, "graph": {"nodes": [' > "$tmp/trunc.json"
cp "$tmp/trunc.json" "$tmp/trunc.orig"
out=$("$twb" train "$tmp/trunc.json" 2>&1); st=$?
check "truncated model: exit 1 naming the file" '[ $st = 1 ] && grep -q "trunc.json" <<<"$out"' "$out"
check "truncated model file unchanged" 'cmp -s "$tmp/trunc.json" "$tmp/trunc.orig"'

cat > "$tmp/shapes.json" <<'JSON'
{"format": "twb-model", "version": 1, "graph": {"nodes": [
 {"id": "x", "op": "input", "attrs": {"shape": [4]}},
 {"id": "a", "op": "linear", "inputs": ["x"], "attrs": {"out_features": 3}},
 {"id": "b", "op": "add", "inputs": ["a", "x"]},
 {"id": "c", "op": "lineer", "inputs": ["b"]}]}}
JSON
out=$("$twb" train "$tmp/shapes.json" 2>&1); st=$?
check "shape errors: every node named" '[ $st = 1 ] && grep -q "node b:" <<<"$out" && grep -q "node c: unknown op" <<<"$out"' "$out"

out=$("$twb" train "$m" --data no-such-data --max-steps 1 2>&1); st=$?
check "unknown dataset: exit 1 with the name" '[ $st = 1 ] && grep -q "no-such-data" <<<"$out"' "$out"

printf 'not a safetensors file' > "$tmp/bad.st"
out=$("$twb" eval "$m" --weights "$tmp/bad.st" 2>&1); st=$?
check "malformed weights: exit 1 naming the file" '[ $st = 1 ] && grep -q "bad.st" <<<"$out"' "$out"

out=$("$twb" train "$m" --data fashion-mnist-subset --lr 1e30 --max-steps 50 --no-eval -q 2>&1); st=$?
check "NaN stops naming the step and the first op producing it" '[ $st = 1 ] && grep -qE "step [0-9]+: (NaN|Inf) first produced by node [a-z0-9]+" <<<"$out"' "$out"

# The command-line debugger.  A log of values that go negative: NaN first
# appears in node lg's forward.
cat > "$tmp/planted.json" <<'JSON'
{"format": "twb-model", "version": 1, "graph": {"nodes": [
 {"id": "x", "op": "input", "attrs": {"shape": [2], "role": "data"}},
 {"id": "y", "op": "input", "attrs": {"shape": [], "dtype": "i64", "role": "label"}},
 {"id": "fc1", "op": "linear", "inputs": ["x"], "attrs": {"out_features": 8}},
 {"id": "lg", "op": "log", "inputs": ["fc1"]},
 {"id": "fc2", "op": "linear", "inputs": ["lg"], "attrs": {"out_features": 2}},
 {"id": "loss", "op": "cross_entropy", "inputs": ["fc2", "y"]}], "outputs": ["fc2"]},
 "training": {"dataset": "spirals", "batch_size": 16}}
JSON
out=$("$twb" train "$tmp/planted.json" --break-on nan --max-steps 3 --no-eval -q --dump-on-break "$tmp/break.st" 2>&1); st=$?
check "--break-on nan: exit 2 at the log's forward" '[ $st = 2 ] && grep -q "NaN first produced by node lg (log, forward)" <<<"$out" && grep -q "at iteration 1 › forward › lg" <<<"$out"' "$out"
check "--break-on nan: min/max/mean/NaN of the op's tensors" 'grep -qE "output +lg +f32\[16, 8\].*NaN [1-9]" <<<"$out" && grep -qE "input +fc1 .*NaN 0" <<<"$out"' "$out"
hdr=$(/usr/bin/python3 -c "
import json,struct,sys
b=open('$tmp/break.st','rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n])
print(sorted(k for k in h if k!='__metadata__'), h['__metadata__']['nodes'])" 2>&1)
check "--dump-on-break writes the op's tensors" "grep -q \"'fc1', 'lg'\" <<<\"\$hdr\" && grep -q \"] lg\$\" <<<\"\$hdr\"" "$hdr"
out=$("$twb" train "$tmp/planted.json" --allow-nan --break-on nan --max-steps 3 --no-eval -q 2>&1); st=$?
check "--break-on nan stops even with --allow-nan" '[ $st = 2 ] && grep -q "NaN first produced by node lg" <<<"$out"' "$out"
out=$("$twb" train "$tmp/planted.json" --mode compiled --break-on nan --max-steps 3 --no-eval -q 2>&1); st=$?
check "--break-on nan, compiled: stops at the instruction naming lg" '[ $st = 2 ] && grep -qE "NaN first produced by node ([a-z0-9]+, )*lg" <<<"$out" && grep -q compiled <<<"$out"' "$out"

# sqrt of relu outputs: finite forward (sqrt 0 = 0), but its gradient 0.5/sqrt(0)
# is not: the first non-finite value appears in sq's backward.
sed -e 's/"lg", "op": "log", "inputs": \["fc1"\]/"r", "op": "relu", "inputs": ["fc1"]}, {"id": "sq", "op": "sqrt", "inputs": ["r"]/' \
    -e 's/"inputs": \["lg"\]/"inputs": ["sq"]/' "$tmp/planted.json" > "$tmp/planted-bwd.json"
out=$("$twb" train "$tmp/planted-bwd.json" --break-on nan --break-on inf --max-steps 3 --no-eval -q 2>&1); st=$?
check "--break-on nan/inf: a value first non-finite in backward stops at that backward op" '[ $st = 2 ] && grep -qE "(NaN|Inf) first produced by node sq \([a-z_]+ kernel, backward\)" <<<"$out" && grep -q "› backward › sq" <<<"$out"' "$out"
out=$("$twb" train "$assets/models/spirals.json" --break-on node=fc2:backward --max-steps 3 --no-eval -q 2>&1); st=$?
check "--break-on node=ID:backward stops there with the gradients" '[ $st = 2 ] && grep -q "breakpoint node=fc2:backward" <<<"$out" && grep -q "gradient  grad:fc2.weight" <<<"$out"' "$out"
# The interactive debugger: commands on standard input, one op and one layer
# at a time, tensors printed by name, then on to the end.
out=$(printf 's\ns\np fc1.weight\nn\nb node=fc3:backward\nc\np grad:fc3.weight\nd\nc\n' |
      "$twb" train "$assets/models/spirals.json" --debug --max-steps 3 --no-eval -q 2>&1); st=$?
check "--debug: step, step, print, next, break, continue to the end" '[ $st = 0 ] && grep -q "at iteration 1 › forward › tanh1 (op tanh)" <<<"$out" && grep -q "break: step layer" <<<"$out" && grep -q "breakpoint node=fc3:backward" <<<"$out" && grep -qE "parameter fc1.weight +f32\[64, 2\]" <<<"$out" && grep -q "steps 3, train loss" <<<"$out"' "$out"
out=$(printf 'p nope\nfrobnicate\nq\n' | "$twb" train "$assets/models/spirals.json" --debug --max-steps 3 --no-eval -q 2>&1); st=$?
check "--debug: unknown names and commands are said; q stops with exit 2" '[ $st = 2 ] && grep -q "no tensor .nope." <<<"$out" && grep -q "unknown command .frobnicate." <<<"$out"' "$out"
out=$("$twb" train "$assets/models/spirals.json" --break-on "loss>" --max-steps 3 2>&1); st=$?
check "--break-on with a bad condition: usage error" '[ $st = 2 ] && grep -q "loss>X" <<<"$out"' "$out"

# --metrics: the dashboard's CSV, every step's loss (as --json's final loss),
# lr and gradient norms, and the test results.
out=$("$twb" train "$assets/models/spirals.json" --max-steps 12 --metrics "$tmp/m.csv" --json 2>&1); st=$?
check "train --metrics writes the curves as CSV" '[ $st = 0 ] && /usr/bin/python3 -c "
import csv, json, math, sys
rows = list(csv.reader(open(sys.argv[1])))
assert rows[0] == [\"run\", \"series\", \"x\", \"y\"], rows[0]
by = {}
for r in rows[1:]:
    by.setdefault(r[1], []).append((int(r[2]), float(r[3])))
assert [x for x, _ in by[\"loss\"]] == list(range(1, 13)), by[\"loss\"]
assert all(math.isfinite(y) for _, y in by[\"loss\"])
assert any(k.startswith(\"grad_norm:\") for k in by), list(by)
res = json.loads(sys.argv[2])
assert abs(by[\"test_accuracy\"][0][1] - res[\"test_accuracy\"]) < 1e-9, (by[\"test_accuracy\"], res)
" "$tmp/m.csv" "$(grep "^{" <<<"$out")"' "$out"
out=$("$twb" train "$m" --batch 0 2>&1); st=$?
check "bad option value: usage error" '[ $st = 2 ]' "$out"
# twb devices: after a compiled run in a fresh cache, the choices it made
# (one row per product shape, with both times) are listed and in the file.
cache=$(mktemp -d)
XDG_CACHE_HOME=$cache TWB_GEMM=auto "$twb" train "$assets/models/spirals.json" --mode compiled --max-steps 2 --no-eval -q >/dev/null 2>&1
out=$(XDG_CACHE_HOME=$cache "$twb" devices --json 2>&1); st=$?
check "twb devices --json: the device and the per-shape choices of the run" '[ $st = 0 ] && /usr/bin/python3 -c "
import json, sys
d = json.loads(sys.argv[1]); g = d[\"gemm\"]
assert d[\"devices\"][0] == \"cpu\" and g[\"cache\"].startswith(sys.argv[2])
assert g[\"kernel\"] == \"openblas fallback\" or len(g[\"choices\"]) >= 3, g
assert all(c[\"kernel\"] in (\"ours\", \"openblas\") and c[\"m\"] > 0 for c in g[\"choices\"])
" "$out" "$cache"' "$out"
out=$(XDG_CACHE_HOME=$cache "$twb" devices 2>&1); st=$?
check "twb devices: a table with the kernel and the cache file" '[ $st = 0 ] && grep -q "cpu matrix products:" <<<"$out" && grep -q "$cache/twb/gemm-" <<<"$out"' "$out"
# The CPU and the OpenBLAS core in force (the structure; the values are the
# machine's): a "cpu:" line, an "openblas core:" line naming a core and its
# kernels' instruction set, and in --json the same with the warning's logic
# (below_cpu is true exactly when there is a warning, and then the warning
# names the OPENBLAS_CORETYPE that fixes it).
check "twb devices: the CPU and the OpenBLAS core in force" '[ $st = 0 ] && grep -Eq "^cpu: .* family [0-9]+ model [0-9]+: " <<<"$out" && grep -Eq "^openblas core: [A-Za-z0-9_]+ \((AVX-512|AVX2|AVX|SSE3|unknown) kernels" <<<"$out"' "$out"
out=$(XDG_CACHE_HOME=$cache "$twb" devices --json 2>&1); st=$?
check "twb devices --json: cpu and blas members, the warning only when below the CPU" '[ $st = 0 ] && /usr/bin/python3 -c "
import json, sys
d = json.loads(sys.argv[1]); b = d[\"blas\"]; c = d[\"cpu\"]
assert isinstance(c[\"family\"], int) and isinstance(c[\"model\"], int) and c[\"isa\"], c
assert b[\"library\"] == \"OpenBLAS\" and b[\"core\"] and b[\"core_isa\"] and b[\"config\"], b
assert b[\"below_cpu\"] == (b[\"warning\"] is not None), b
assert not b[\"below_cpu\"] or \"OPENBLAS_CORETYPE=\" + b[\"best_core\"] in b[\"warning\"], b
" "$out"' "$out"
rm -rf "$cache"
exit $fail
