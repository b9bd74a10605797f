#!/usr/bin/env bash
# test-sizes.sh TWB ASSETS — sizes taken from a model's values, and graphs of
# scale, through the commands (TAP).  Each refusal is exit status 1 with a
# message naming the dataset or node and the figures, made before anything
# large is allocated; each accepted case runs to the end.
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
out=
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "$out"; fi; }
skip () { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
# "refused" CMD... : exit 1, and the output matches the regex in $want.
refused () { out=$("$@" 2>&1); st=$?; [ $st = 1 ] && grep -qE -- "$want" <<<"$out"; }
ran () { out=$("$@" 2>&1); st=$?; [ $st = 0 ]; }

sp="$assets/models/spirals.json"
# gen KIND N OUT: spirals' recipe on a generated graph.  input WIDTH: x of
# WIDTH values sliced to 2; classes C: the logits padded to C; chain,
# shared, linear: N tanh, N uses of one linear layer, N linear layers.
gen () { $py - "$sp" "$@" <<'PY'
import json, sys
sp, kind, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
m = json.load(open(sp))
x = {"id": "x", "op": "input", "attrs": {"shape": [2], "dtype": "f32", "role": "data"}}
y = {"id": "y", "op": "input", "attrs": {"shape": [], "dtype": "i64", "role": "label"}}
nodes, prev = [x, y], "x"
def add(node):
    global prev
    nodes.append(node)
    prev = node["id"]
lin = lambda i, inp, **k: dict({"id": i, "op": "linear", "inputs": [inp], "attrs": {"out_features": 2}}, **k)
if kind == "input":
    x["attrs"]["shape"] = [n]
    add({"id": "first", "op": "slice", "inputs": ["x"], "attrs": {"axis": 1, "end": 2}})
for i in range(n if kind in ("chain", "shared", "linear") else 0):
    if kind == "chain":
        add({"id": "t%d" % i, "op": "tanh", "inputs": [prev]})
    else:
        add(lin("fc%d" % i, prev, **({"share": "fc0"} if kind == "shared" and i else {})))
add(lin("head", prev))
if kind == "classes":
    add({"id": "wide", "op": "pad", "inputs": ["head"], "attrs": {"pads": [0, n - 2]}})
nodes.append({"id": "loss", "op": "cross_entropy", "inputs": [prev, "y"]})
m["graph"] = {"nodes": nodes, "outputs": [prev]}
m["training"]["batch_size"] = 8
json.dump(m, open(out, "w"))
PY
}

echo "1..15"

# Inputs whose sample sizes wrap or exceed the machine: training refuses the
# model by its memory estimate before any data is made; the commands that
# open data alone (profile, eval: its test split, a quarter) refuse the
# synthetic data by its size.
gen input $(( (1 << 60) + 1 )) "$tmp/in60.json"
want='node x: its output at batch 1 takes 4.61 EB, and a training step of the model needs about 13.8 EB in all'
check "train: samples of 2^60 + 1 values refused by the estimate" 'refused "$twb" train "$tmp/in60.json" --data synthetic:8 --max-steps 1 --no-eval'
want='dataset synthetic:8 \(8 samples of 1152921504606846977 values for input .x., the patterns of 2 of the 2 classes\) needs more than 2\^63 bytes'
check "profile: their synthetic data refused, the size named" 'refused "$twb" profile "$tmp/in60.json" --data synthetic:8 --steps 1 --trace "$tmp/t.json"'
gen input $(( 1 << 40 )) "$tmp/in40.json"
want='node x: its output at batch 1 takes 4.40 TB'
check "train: samples of 2^40 values refused with the figures" 'refused "$twb" train "$tmp/in40.json" --data synthetic:8 --max-steps 1 --no-eval'
want='dataset synthetic:8 \(2 samples of 1099511627776 values .*\) needs 17.6 TB; .* of memory is available'
check "eval: their synthetic data refused with the figures" 'refused "$twb" eval "$tmp/in40.json" --weights "$tmp/none.st" --data synthetic:8'

# Class counts past int, and 2^31 - 1 classes (a training step of 8.6 GB
# logits): refused at once, before any data is made.
gen classes $(( 1 << 31 )) "$tmp/c31.json"
want='dataset synthetic:8: the model.s logits have 2147483648 classes; labels take at most 2147483647'
check "eval: 2^31 classes refused naming the count" 'refused "$twb" eval "$tmp/c31.json" --weights "$tmp/none.st" --data synthetic:8'
gen classes $(( (1 << 31) - 1 )) "$tmp/c31m.json"
want='node wide: its output at batch 1 takes 8.59 GB, and a training step of the model needs about .*; .* of memory is available \(TWB_MEMORY_LIMIT\)'
out=$( { /usr/bin/time -f "%M" env TWB_MEMORY_LIMIT=4G "$twb" train "$tmp/c31m.json" --data synthetic:8 --max-steps 1 --no-eval; } 2>&1); st=$?
rss=$(tail -1 <<<"$out")
check "train: 2^31 - 1 classes refused by the memory estimate before the data ($rss kB)" \
  '[ $st = 1 ] && grep -qE -- "$want" <<<"$out" && [ "${rss:-9999999}" -lt 200000 ]'

# The same graph imported from ONNX with --loss auto.
if $py -c 'import onnx' 2>/dev/null; then
  $py - "$tmp/in60.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto, numpy_helper
nodes = [helper.make_node('ReduceMean', ['x'], ['r'], name='mean', axes=[1], keepdims=1),
         helper.make_node('Gemm', ['r', 'W', 'B'], ['y'], name='fc', transB=1)]
g = helper.make_graph(nodes, 'in60', [helper.make_tensor_value_info('x', TensorProto.FLOAT, ['N', 2**60 + 1])],
    [helper.make_tensor_value_info('y', TensorProto.FLOAT, ['N', 2])],
    [numpy_helper.from_array(np.ones((2, 1), np.float32), 'W'), numpy_helper.from_array(np.zeros(2, np.float32), 'B')])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), sys.argv[1])
PY
  "$twb" import "$tmp/in60.onnx" --loss auto -o "$tmp/in60-onnx.json" >/dev/null 2>&1
  want='node x: its output at batch 1 takes 4.61 EB'
  check "import --loss auto of [N, 2^60 + 1], then train: refused the same way" \
    '[ -s "$tmp/in60-onnx.json" ] && refused "$twb" train "$tmp/in60-onnx.json" --data synthetic:8 --max-steps 1 --no-eval'
  want='dataset synthetic:8 \(8 samples of 1152921504606846977 values .*\) needs more than 2\^63 bytes'
  check "  ... and profile refuses its synthetic data" \
    'refused "$twb" profile "$tmp/in60-onnx.json" --data synthetic:8 --steps 1 --trace "$tmp/t.json"'
else
  skip "import --loss auto of [N, 2^60 + 1], then train" "no onnx for $py"
  skip "  ... and profile refuses its synthetic data" "no onnx for $py"
fi

# Graphs of scale through the commands, both modes.
gen shared 5000 "$tmp/shared.json"
check "train: a layer shared 5,000 times, eager" 'ran "$twb" train "$tmp/shared.json" --max-steps 2 --no-eval -q'
check "train: the same, compiled" 'ran "$twb" train "$tmp/shared.json" --max-steps 2 --no-eval -q --mode compiled'
gen linear 3000 "$tmp/linear.json"
check "compile: 3,000 linear layers" 'ran "$twb" compile "$tmp/linear.json" --json'
gen chain 30000 "$tmp/chain.json"
check "compile: a chain of 30,000 nodes" 'ran "$twb" compile "$tmp/chain.json" --json'
check "train: the same chain, compiled" 'ran "$twb" train "$tmp/chain.json" --max-steps 1 --no-eval -q --mode compiled'
check "export: the same chain" 'ran "$twb" export "$tmp/chain.json" -o "$tmp/chain.onnx"'
check "info: the same chain" 'ran "$twb" info "$tmp/chain.json"'
exit $fail
