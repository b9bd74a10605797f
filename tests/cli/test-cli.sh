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

echo "1..19"

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

# Resume: 12 steps straight vs 6 + 6 resumed give the same checkpoint, byte for byte.
m="$assets/models/mlp.json"
"$twb" train "$m" --data fashion-mnist-subset --max-steps 12 --no-eval -q --checkpoint "$tmp/a.st" >/dev/null 2>&1
"$twb" train "$m" --data fashion-mnist-subset --max-steps 6 --no-eval -q --checkpoint "$tmp/b.st" >/dev/null 2>&1
"$twb" train "$m" --data fashion-mnist-subset --max-steps 12 --no-eval -q --resume "$tmp/b.st" --checkpoint "$tmp/b.st" >/dev/null 2>&1
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
check "NaN loss stops with the step" '[ $st = 1 ] && grep -qE "(NaN|infinite) at step [0-9]+" <<<"$out"' "$out"

out=$("$twb" train "$m" --batch 0 2>&1); st=$?
check "bad option value: usage error" '[ $st = 2 ]' "$out"
exit $fail
