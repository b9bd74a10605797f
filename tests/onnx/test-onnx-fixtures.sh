#!/usr/bin/env bash
# test-onnx-fixtures.sh DATA — the checked-in fixtures are what
# make-fixtures.py writes (TAP): regenerated with /usr/bin/python3's torch
# into a temporary folder (skipped without torch and onnx), the inputs and
# outputs byte for byte, the .onnx files too when torch is the version that
# wrote them (producer_version).
set -u
data=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "1..2"
if ! /usr/bin/python3 -c 'import torch, onnx' 2>/dev/null; then
  echo "ok 1 # SKIP no torch and onnx for /usr/bin/python3 (bench dependencies)"
  echo "ok 2 # SKIP no torch and onnx for /usr/bin/python3 (bench dependencies)"
  exit 0
fi
fail=0
if out=$(/usr/bin/python3 "$data/make-fixtures.py" "$tmp" 2>&1) \
   && for f in mlp-input_0.pb mlp-output_0.pb convnet-input_0.pb convnet-output_0.pb; do
        cmp "$tmp/$f" "$data/$f" || exit 1
      done; then
  echo "ok 1 - regenerated inputs and outputs are the checked-in ones"
else
  fail=1
  echo "not ok 1 - regenerated inputs and outputs are the checked-in ones"
  sed 's/^/# /' <<<"$out"
fi
same=$(/usr/bin/python3 -c "
import onnx, torch
v = onnx.load('$data/mlp.onnx').producer_version
print(torch.__version__.startswith(v))")
if [ "$same" != True ]; then
  echo "ok 2 # SKIP the fixtures come from another torch version"
elif cmp "$tmp/mlp.onnx" "$data/mlp.onnx" && cmp "$tmp/convnet.onnx" "$data/convnet.onnx"; then
  echo "ok 2 - regenerated .onnx files are the checked-in ones"
else
  fail=1
  echo "not ok 2 - regenerated .onnx files are the checked-in ones"
fi
exit $fail
