#!/usr/bin/env bash
# test-onnx-info-cli.sh TWB DATA — `twb onnx-info` as a user runs it (TAP):
# the fixtures' figures, --json against ONNX's own Python reader (where
# /usr/bin/python3 has onnx) on the fixtures and libonnx-testdata's models,
# and refused files named with exit status 1.
set -u
twb=$1
data=$2
testdata=/usr/share/libonnx-testdata/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
skip () { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }

echo "1..14"

out=$("$twb" onnx-info "$data/mlp.onnx" 2>&1); st=$?
check "onnx-info mlp.onnx exits 0" '[ $st = 0 ]' "$out"
check "mlp: IR 7 from pytorch 1.13, opset 13" \
  'grep -q "^ir version:   7$" <<<"$out" && grep -q "^producer:     pytorch 1\." <<<"$out" && grep -q "^opset:        13$" <<<"$out"' "$out"
check "mlp: input and output with shapes" \
  'grep -q "^inputs:       input: FLOAT \[2, 8\]$" <<<"$out" && grep -q "^outputs:      output: FLOAT \[2, 4\]$" <<<"$out"' "$out"
# Linear(8, 16) + Linear(16, 4): 8·16 + 16 + 16·4 + 4.
check "mlp: 3 nodes by op, 4 initializers, 212 parameters" \
  'grep -q "^nodes:        3 (Gemm 2, Relu 1)$" <<<"$out" && grep -q "^initializers: 4, 212 parameters$" <<<"$out"' "$out"

out=$("$twb" onnx-info "$data/convnet.onnx" --json 2>&1); st=$?
check "onnx-info convnet.onnx --json exits 0" '[ $st = 0 ]' "$out"
# conv 4·3·3·3 + 4, batch norm 4 × 4, fc 5·64 + 5.
good=$(/usr/bin/python3 -c "
import json, sys
d = json.loads(sys.stdin.read())
print(d['opset'] == 13 and d['nodes'] == 6 and d['parameters'] == 453 and d['initializers'] == 8
      and d['ops'] == {'Conv': 1, 'BatchNormalization': 1, 'Relu': 1, 'MaxPool': 1, 'Flatten': 1, 'Gemm': 1}
      and d['inputs'] == [{'name': 'input', 'type': 'FLOAT', 'shape': [1, 3, 8, 8]}]
      and d['outputs'][0]['shape'] == [1, 5])" <<<"$out" 2>&1)
check "convnet --json: ops, 453 parameters, shapes" '[ "$good" = True ]' "$out
$good"

# The same figures as onnx's own reader, file by file.
if /usr/bin/python3 -c 'import onnx' 2>/dev/null; then
  files=("$data/mlp.onnx" "$data/convnet.onnx")
  if [ -d "$testdata" ]; then
    # Every 8th node case and all simple ones: a process each, ~0.1 s
    # (test-onnx-read reads all of them in-process).
    i=0
    for f in "$testdata"/node/*/model.onnx; do
      [ $((i++ % 8)) = 0 ] && files+=("$f")
    done
    for f in "$testdata"/simple/*/model.onnx; do files+=("$f"); done
  fi
  : >"$tmp/info.jsonl"
  for f in "${files[@]}"; do
    "$twb" onnx-info "$f" --json >>"$tmp/info.jsonl" 2>/dev/null
  done
  res=$(/usr/bin/python3 - "$tmp/info.jsonl" <<'PY' 2>&1
import collections, json, sys
import onnx
checked = bad = 0
for line in open(sys.argv[1]):
    d = json.loads(line)
    m = onnx.load(d["file"], load_external_data=False)
    g = m.graph
    inits = {t.name for t in g.initializer}
    ops = collections.Counter(
        n.op_type if n.domain in ("", "ai.onnx") else n.domain + "." + n.op_type for n in g.node)
    params = 0
    for t in g.initializer:
        k = 1
        for x in t.dims:
            k *= x
        params += k
    want = dict(ir_version=m.ir_version, opset=[o.version for o in m.opset_import
                                              if o.domain in ("", "ai.onnx")][0],
                nodes=len(g.node), ops=dict(ops), initializers=len(g.initializer),
                parameters=params, inputs=[i.name for i in g.input if i.name not in inits],
                outputs=[o.name for o in g.output], producer_name=m.producer_name)
    got = dict(d, inputs=[i["name"] for i in d["inputs"]], outputs=[o["name"] for o in d["outputs"]])
    diff = {k: (got[k], v) for k, v in want.items() if got[k] != v}
    checked += 1
    if diff:
        bad += 1
        print(d["file"], diff)
print("checked", checked, "differ", bad)
PY
)
  last=$(tail -n 1 <<<"$res")
  checked=$(awk '{print $2}' <<<"$last")
  check "--json agrees with onnx.load on ${checked:-0} files" \
    '[[ "$last" =~ ^checked\ [0-9]+\ differ\ 0$ ]] && [ "$checked" -ge 2 ]' "$res"
  if [ -d "$testdata" ]; then
    # Of the 140 sampled from ONNX 1.12's data, 114 are at opsets 11-17.
    check "libonnx-testdata: onnx-info read the sampled models ($checked)" '[ "$checked" -ge 100 ]' "$res"
  else
    skip "no $testdata (Debian's libonnx-testdata)"
  fi
else
  skip "no onnx for /usr/bin/python3 (Debian's python3-onnx)"
  skip "no onnx for /usr/bin/python3 (Debian's python3-onnx)"
fi

# Refused files: exit 1, the file named, nothing written.
out=$("$twb" onnx-info "$tmp/missing.onnx" 2>&1); st=$?
check "a missing file: exit 1, named" '[ $st = 1 ] && grep -q "$tmp/missing.onnx: No such file" <<<"$out"' "$out"
head -c 500 "$data/mlp.onnx" >"$tmp/cut.onnx"
sum=$(md5sum <"$tmp/cut.onnx")
out=$("$twb" onnx-info "$tmp/cut.onnx" 2>&1); st=$?
check "a truncated file: exit 1, named, untouched" \
  '[ $st = 1 ] && grep -q "^twb: $tmp/cut.onnx: " <<<"$out" && [ "$(md5sum <"$tmp/cut.onnx")" = "$sum" ]' "$out"
if [ -f "$testdata/pytorch-converted/test_Conv2d/model.onnx" ]; then
  f=$testdata/pytorch-converted/test_Conv2d/model.onnx
  out=$("$twb" onnx-info "$f" 2>&1); st=$?
  check "opset 6: exit 1, refused with the range" '[ $st = 1 ] && grep -qF "$f: opset 6 is outside 11–17" <<<"$out"' "$out"
else
  skip "no $testdata (Debian's libonnx-testdata)"
fi
out=$("$twb" onnx-info 2>&1); st=$?
check "no file: usage, exit 2" '[ $st = 2 ] && grep -q "usage: twb onnx-info" <<<"$out"' "$out"
out=$("$twb" onnx-info --frobnicate "$data/mlp.onnx" 2>&1); st=$?
check "unknown option: exit 2, named" '[ $st = 2 ] && grep -q "unknown option .--frobnicate." <<<"$out"' "$out"
out=$("$twb" --help 2>&1)
check "twb --help lists onnx-info" 'grep -q "^  onnx-info FILE.onnx" <<<"$out"' "$out"
exit $fail
