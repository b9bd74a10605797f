#!/usr/bin/env bash
# test-onnx-fixtures.sh DATA — the checked-in fixtures are what
# make-fixtures.py writes (TAP): regenerated with /usr/bin/python3's torch
# into a temporary folder (skipped without torch and onnx) and compared by
# value (compare-fixtures.py), one case per file; the .onnx files' graphs
# too when torch is the version that wrote them (producer_version).
#
# The fixtures were made on another CPU, so values are compared within a
# tolerance, relative to each tensor's largest |value|, never byte for byte:
# - inputs and weights, 1e-6: drawn from torch's seeded generator, whose
#   normal sampler evaluates log, sqrt and cos with vector code that rounds
#   an ulp or two (2^-24 ≈ 6e-8 each) differently from one CPU to another;
# - outputs, 1e-5: float32 sums of at most 64 products (and a batch norm)
#   that another CPU's kernels add in another order: 64 × 2^-24 ≈ 4e-6.
set -u
data=$1
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tensors=(mlp-input_0.pb mlp-output_0.pb convnet-input_0.pb convnet-output_0.pb)
models=(mlp.onnx convnet.onnx)
echo "1..$(( ${#tensors[@]} + ${#models[@]} ))"
if ! /usr/bin/python3 -c 'import torch, onnx' 2>/dev/null; then
  for f in "${tensors[@]}" "${models[@]}"; do
    echo "ok - $f # SKIP no torch and onnx for /usr/bin/python3 (scripts/setup-deps --bench)"
  done
  exit 0
fi

fail=0
made=1
gen=$(/usr/bin/python3 "$data/make-fixtures.py" "$tmp" 2>&1) || made=0
compare () {   # compare KIND FILE RTOL: one TAP line
  local out
  if [ $made = 0 ]; then
    fail=1
    echo "not ok - $2: regenerated (make-fixtures.py failed)"
    sed 's/^/# /' <<<"$gen"
  elif out=$(/usr/bin/python3 "$here/compare-fixtures.py" "$1" "$tmp/$2" "$data/$2" "$3" 2>&1); then
    echo "ok - $out"
  else
    fail=1
    echo "not ok - $2 is the checked-in one within $3"
    sed 's/^/# /' <<<"$out"
  fi
}
for f in "${tensors[@]}"; do
  case $f in
    *-input_*) compare tensor "$f" 1e-6 ;;
    *) compare tensor "$f" 1e-5 ;;
  esac
done

same=$(/usr/bin/python3 -c "
import onnx, torch
v = onnx.load('$data/mlp.onnx').producer_version
print(torch.__version__.startswith(v))" 2>/dev/null)
for f in "${models[@]}"; do
  if [ "$same" != True ]; then
    echo "ok - $f # SKIP the fixtures come from another torch version (its exporter writes other graphs)"
  else
    compare model "$f" 1e-6
  fi
done
exit $fail
