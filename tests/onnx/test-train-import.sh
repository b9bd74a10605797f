#!/usr/bin/env bash
# test-train-import.sh TWB DATA — training an imported model from the
# command line (TAP): `twb import --loss` writes a model with a label and a
# loss and the synthetic-data recipe, `twb train` runs it from the imported
# weights with a falling loss, and bad --loss values and a loss the output
# cannot take are refused, writing nothing.
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

echo "1..7"

out=$("$twb" import "$data/import-cnn.onnx" --loss cross-entropy -o "$tmp/cnn.json" 2>&1); st=$?
check "import --loss cross-entropy: 18 nodes, one of them the loss" \
  '[ $st = 0 ] && grep -q "^wrote $tmp/cnn.json: 18 nodes (input 2, .*cross_entropy 1)$" <<<"$out"' "$out"
check "the model file names the loss and the synthetic data" \
  'grep -q "\"loss\" : \"loss\"\|\"loss\": \"loss\"" "$tmp/cnn.json" && grep -q "\"dataset\" *: *\"synthetic\"" "$tmp/cnn.json"' \
  "$(grep -A8 '"training"' "$tmp/cnn.json")"

# Ten full-batch steps of 32 samples from the imported weights (Adam at
# 0.05: the recipe's 1e-4 moves this 379-value net slowly; the loss then
# falls 1.15 -> 0.83, see test-train-import.c).
out=$("$twb" train "$tmp/cnn.json" --init-weights "$tmp/cnn.safetensors" --strict \
      --data synthetic:32 --batch 32 --epochs 10 --lr 0.05 --metrics "$tmp/m.csv" --no-eval 2>&1); st=$?
check "twb train runs it from the imported weights: 15 tensors loaded" \
  '[ $st = 0 ] && grep -q "initial weights from $tmp/cnn.safetensors: 15 tensors loaded" <<<"$out"' "$out"
losses=$(grep "^train,loss," "$tmp/m.csv" 2>/dev/null | cut -d, -f4)
check "10 steps, each loss below the one before, the last under 0.9" \
  '[ "$(wc -l <<<"$losses")" = 10 ] && awk "NR > 1 && \$1 >= p { bad = 1 } { p = \$1 } END { exit bad || p >= 0.9 }" <<<"$losses"' \
  "$losses"

out=$("$twb" import "$data/import-cnn.onnx" --loss focal -o "$tmp/f.json" 2>&1); st=$?
check "--loss focal: exit 2, the names listed, nothing written" \
  '[ $st = 2 ] && grep -q "none, auto, cross-entropy or mse" <<<"$out" && [ ! -e "$tmp/f.json" ] && [ ! -e "$tmp/f.safetensors" ]' "$out"

out=$("$twb" import "$data/import-ops.onnx" --loss cross-entropy -o "$tmp/o.json" 2>&1); st=$?
check "cross-entropy on an image output: exit 1 naming the output, nothing written" \
  '[ $st = 1 ] && grep -q "output .* is .*cross-entropy needs logits \[N, C\]" <<<"$out" && [ ! -e "$tmp/o.json" ] && [ ! -e "$tmp/o.safetensors" ]' "$out"

out=$("$twb" import "$data/import-ops.onnx" --loss auto -o "$tmp/o.json" 2>&1); st=$?
check "auto on an image output: imported without a loss" \
  '[ $st = 0 ] && ! grep -q "cross_entropy\|mse_loss" "$tmp/o.json"' "$out"
exit $fail
