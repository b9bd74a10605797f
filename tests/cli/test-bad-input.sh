#!/usr/bin/env bash
# test-bad-input.sh TWB ASSETS — crafted input that once crashed twb or
# overwrote the user's files (TAP).  Each is refused with exit status 1 and
# a message naming the file, node or option, and leaves the files as they
# were; or, for the output files, is written the way the user expects.
set -u
twb=$1
assets=$2
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
# On failure the last command's output ($out) is shown.
out=
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "$out"; fi; }
skip () { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# "refused" CMD... : exit 1, and the output matches the regex in $want.
refused () { out=$("$@" 2>&1); st=$?; [ $st = 1 ] && grep -qE -- "$want" <<<"$out"; }

echo "1..29"

sp="$assets/models/spirals.json"
# spirals.json with one edit: edit FROM TO > OUT (a literal replacement).
edit () { /usr/bin/python3 -c "
import sys
t = open(sys.argv[1]).read()
assert sys.argv[2] in t, sys.argv[2]
sys.stdout.write(t.replace(sys.argv[2], sys.argv[3], 1))" "$sp" "$1" "$2"; }
# A .npy of float32 zeros: npy FILE N FEATURES
npy () { /usr/bin/python3 -c "
import struct, sys
n, f = int(sys.argv[2]), int(sys.argv[3])
h = \"{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }\" % (n, f)
h += ' ' * (63 - (10 + len(h)) % 64) + '\n'
open(sys.argv[1], 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + bytes(4 * n * f))" "$@"; }

"$twb" train "$sp" --max-steps 2 --no-eval -q --checkpoint "$tmp/w.st" >/dev/null 2>&1
check "a checkpoint to predict with" '[ -s "$tmp/w.st" ]'
npy "$tmp/x.npy" 3 2
npy "$tmp/x0.npy" 0 2

# Models that loaded, then crashed a command.
# No output marked: the prediction the loss scores (fc3) is the output.
edit '"outputs": ["fc3"]' '"outputs": []' > "$tmp/noout.json"
check "predict: \"outputs\": [] predicts what the loss scores" 'out=$("$twb" predict "$tmp/noout.json" --weights "$tmp/w.st" --input "$tmp/x.npy" --json 2>&1) && grep -qE "^\{\"predictions\":\[[0-9],[0-9],[0-9]\]\}$" <<<"$out"'
want='nodata.json: the graph has no input node with role "data"'
edit '"role": "data"' '"role": "other"' > "$tmp/nodata.json"
check "compile: no data input refused at load" 'refused "$twb" compile "$tmp/nodata.json"'
edit '"outputs": ["fc3"]' '"outputs": ["fc2:9"]' > "$tmp/port.json"
want="output 'fc2:9' refers to output 9 of 'fc2', which has 1 output"
check "compile: output port out of range refused" 'refused "$twb" compile "$tmp/port.json"'
check "train --mode compiled: the same" 'refused "$twb" train "$tmp/port.json" --max-steps 1 --mode compiled'
want='x0.npy holds no samples'
check "predict: a zero-sample .npy refused" 'refused "$twb" predict "$sp" --weights "$tmp/w.st" --input "$tmp/x0.npy"'
check "predict --mode eager: the same" 'refused "$twb" predict "$sp" --weights "$tmp/w.st" --input "$tmp/x0.npy" --mode eager'

# Overflow: named node and attribute.
edit '"out_features": 64 }' '"out_features": 9223372036854775807 }' > "$tmp/big.json"
want='node fc1: linear: out_features 9223372036854775807'
check "info: out_features = INT64_MAX refused naming node and attribute" 'refused "$twb" info "$tmp/big.json"'
edit '{ "id": "tanh1", "op": "tanh", "inputs": ["fc1"], "pos": [540, 40] },' \
  '{ "id": "tanh1", "op": "reshape", "inputs": ["fc1"], "attrs": { "shape": [5, 3689348814741910336] } },' > "$tmp/reshape.json"
want="node tanh1: reshape: 'shape' \[5, 3689348814741910336\]"
check "predict: reshape to [5, 3689348814741910336] refused" 'refused "$twb" predict "$tmp/reshape.json" --weights "$tmp/w.st" --input "$tmp/x.npy"'

# Out of memory: refused with the figures, before allocating.
edit '"out_features": 64 }' '"out_features": 2000000000 }' > "$tmp/wide.json"
want='node fc[12]: .*needs about .* in all; .* of memory is available'
check "train: a layer of 2e9 outputs refused with the figures" 'TWB_MEMORY_LIMIT=1G refused "$twb" train "$tmp/wide.json" --max-steps 1 --no-eval'
edit '"out_features": 64 }' '"out_features": 1000000000000 }' > "$tmp/wider.json"
check "predict: 1e12 outputs, the same" 'refused "$twb" predict "$tmp/wider.json" --weights "$tmp/w.st" --input "$tmp/x.npy"'
# compile --batch estimates the eager peak instead of running a step.
out=$( { /usr/bin/time -f "%M" "$twb" compile "$sp" --batch 100000000 --json > "$tmp/c.json"; } 2>&1)
rss=$(tail -1 <<<"$out")
peak=$(/usr/bin/python3 -c "import json; print(json.load(open('$tmp/c.json'))['eager_peak_bytes'])" 2>/dev/null)
check "compile --batch 1e8: eager peak estimated ($peak bytes) in $rss kB" '[ "${peak:-0}" -gt 100000000000 ] && [ "${rss:-9999999}" -lt 1000000 ]'
want='/dev/zero is a character device, not a regular file'
check "info /dev/zero refused at once" 'refused timeout 20 "$twb" info /dev/zero'
(cat "$sp"; echo '{"format": "twb-model"}') > "$tmp/trail.json"
want='trail.json: line [0-9]+, column 1: content after the end of the top-level value'
check "trailing JSON after the model refused" 'refused "$twb" info "$tmp/trail.json"'

# Output files.
cp "$sp" "$tmp/model.json"
want='--checkpoint .*model.json is the same file as the model'
check "train --checkpoint MODEL.json refused" 'refused "$twb" train "$tmp/model.json" --max-steps 1 --no-eval -q --checkpoint "$tmp/model.json"'
check "  ... and the model is unchanged" 'cmp -s "$sp" "$tmp/model.json"'
ln -s x.npy "$tmp/x-link.npy"
cp "$tmp/x.npy" "$tmp/x-orig.npy"
want='--output .*x-link.npy is the same file as --input'
check "predict --output onto --input (through a link) refused, input unchanged" 'refused "$twb" predict "$sp" --weights "$tmp/w.st" --input "$tmp/x.npy" --output "$tmp/x-link.npy" && cmp -s "$tmp/x.npy" "$tmp/x-orig.npy"'
chmod 600 "$tmp/w.st"
: > "$tmp/w.st.tmp-2147483646-AbC123"   # left by a killed save (no such pid)
"$twb" train "$sp" --max-steps 2 --no-eval -q --checkpoint "$tmp/w.st" >/dev/null 2>&1
check "a 0600 checkpoint stays 0600" '[ "$(stat -c %a "$tmp/w.st")" = 600 ]'
check "a stale temporary of a dead writer is removed" '[ ! -e "$tmp/w.st.tmp-2147483646-AbC123" ]'
ln -s w.st "$tmp/w-link.st"
"$twb" train "$sp" --max-steps 3 --no-eval -q --checkpoint "$tmp/w-link.st" >/dev/null 2>&1
check "a checkpoint saved through a link keeps the link and updates its target" '[ -L "$tmp/w-link.st" ] && [ "$tmp/w-link.st" -ef "$tmp/w.st" ] && [ -z "$(ls "$tmp" | grep tmp-)" ]' "$(ls -l "$tmp")"
mkdir "$tmp/dir.st"
want='dir.st is a directory, not a regular file: refusing to replace it'
check "--checkpoint onto a directory refused" 'refused "$twb" train "$sp" --max-steps 1 --no-eval -q --checkpoint "$tmp/dir.st" && [ -d "$tmp/dir.st" ]'
if [ "$(id -u)" = 0 ] && [ -c /dev/full ] && [ -w /dev/full ]; then
  want='/dev/full is a character device, not a regular file'
  check "--checkpoint /dev/full refused, the device kept" 'refused "$twb" train "$sp" --max-steps 1 --no-eval -q --checkpoint /dev/full && [ -c /dev/full ]'
else
  skip "--checkpoint /dev/full refused" "not root: /dev/full is not replaceable anyway"
fi
# Nesting: a 200 KB safetensors header 100,000 levels deep (any downloaded
# state_dict can be one) crashed every command reading weights; a GEMM
# choice cache of 100,000 nested '[' crashed twb devices and every compiled
# run.  Refused naming the file; the cache is ignored and measured anew.
$py - "$tmp/deep.st" <<'PY'
import struct, sys
h = b'{"w": ' + b'[' * 100000 + b']' * 100000 + b'}'
h += b' ' * (-len(h) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h)
PY
want='deep.st: header: line 1: nested more than 64 levels deep'
check "train --init-weights: a 100,000-deep header refused" 'refused "$twb" train "$sp" --max-steps 1 --no-eval -q --init-weights "$tmp/deep.st"'
check "train --resume: refused" 'refused "$twb" train "$sp" --max-steps 1 --no-eval -q --resume "$tmp/deep.st"'
check "eval --weights: refused" 'refused "$twb" eval "$sp" --weights "$tmp/deep.st"'
check "predict --weights: refused" 'refused "$twb" predict "$sp" --weights "$tmp/deep.st" --input "$tmp/x.npy"'
check "export --weights: refused" 'refused "$twb" export "$sp" --weights "$tmp/deep.st" -o "$tmp/deep.onnx" && [ ! -e "$tmp/deep.onnx" ]'
mkdir "$tmp/cache"
cache=$(XDG_CACHE_HOME="$tmp/cache" "$twb" devices | sed -n 's/^choices cache: //p')
mkdir -p "$(dirname "$cache")"
$py -c "import sys; open(sys.argv[1], 'w').write('{\"format\": 1, \"choices\": ' + '[' * 100000 + ']' * 100000 + '}')" "$cache"
out=$(XDG_CACHE_HOME="$tmp/cache" "$twb" devices 2>&1); st=$?
check "twb devices with a 100,000-deep choice cache: runs, the cache ignored" '[ $st = 0 ] && grep -q "choices cache: " <<<"$out"'
XDG_CACHE_HOME="$tmp/cache" $py -c "import sys; open(sys.argv[1], 'w').write('{\"format\": 1, \"choices\": ' + '[' * 100000 + ']' * 100000 + '}')" "$cache"
out=$(XDG_CACHE_HOME="$tmp/cache" "$twb" train "$sp" --mode compiled --max-steps 2 --no-eval -q 2>&1); st=$?
check "a compiled run with that cache trains" '[ $st = 0 ]'
exit $fail
