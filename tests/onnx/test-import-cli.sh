#!/usr/bin/env bash
# test-import-cli.sh TWB DATA — `twb import` as a user runs it (TAP): what it
# writes and prints, the default output beside the ONNX file, the model
# running under `twb info`, and refusals (unsupported nodes, output onto the
# input) that write nothing and leave existing files as they were.
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

out=$("$twb" import "$data/import-cnn.onnx" -o "$tmp/cnn.json" 2>&1); st=$?
check "import cnn exits 0" '[ $st = 0 ]' "$out"
check "it names the model file with nodes per op" \
  'grep -q "^wrote $tmp/cnn.json: 16 nodes (input 1, conv2d 3, batch_norm 2, relu 3," <<<"$out"' "$out"
check "and the weights beside it: 15 tensors" \
  'grep -q "^wrote $tmp/cnn.safetensors: 15 tensors, 379 values$" <<<"$out" && [ -s "$tmp/cnn.safetensors" ]' "$out"
info=$("$twb" info "$tmp/cnn.json" 2>&1); st=$?
check "twb info reads the imported model" '[ $st = 0 ] && grep -q "layer1.0.conv2" <<<"$info"' "$info"

cp "$data/import-mlp.onnx" "$tmp/mlp.onnx"
out=$("$twb" import "$tmp/mlp.onnx" 2>&1); st=$?
check "without -o: MODEL.json and MODEL.safetensors beside MODEL.onnx" \
  '[ $st = 0 ] && [ -s "$tmp/mlp.json" ] && [ -s "$tmp/mlp.safetensors" ]' "$out"

echo keep > "$tmp/u.json"
out=$("$twb" import "$data/import-unsupported.onnx" -o "$tmp/u.json" 2>&1); st=$?
check "unsupported nodes: exit 1, both named (the fixture's TopK imports)" \
  '[ $st = 1 ] && grep -q "2 nodes cannot be imported" <<<"$out" && ! grep -q "TopK" <<<"$out" && grep -q "Loop_12" <<<"$out" && grep -q "auto_pad" <<<"$out"' "$out"
check "the existing output untouched, no weights written" \
  '[ "$(cat "$tmp/u.json")" = keep ] && [ ! -e "$tmp/u.safetensors" ]'

out=$("$twb" import "$tmp/mlp.onnx" -o "$tmp/mlp.onnx" 2>&1); st=$?
check "-o onto the input refused" '[ $st = 1 ] && cmp -s "$tmp/mlp.onnx" "$data/import-mlp.onnx"' "$out"

out=$("$twb" import 2>&1); st=$?
check "no file: usage, exit 2" '[ $st = 2 ] && grep -q "usage: twb import" <<<"$out"' "$out"
exit $fail
