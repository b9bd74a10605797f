#!/usr/bin/env bash
# test-value-rules.sh TWB ASSETS — one rule for each kind of value, the same
# in every command that reads it (TAP):
# - weights: integer tensors for float parameters are refused by eval,
#   predict, export --weights, train --init-weights and --resume alike (eval
#   ran them as floats: accuracy 50%, exit 0); f64 weights still load;
# - samples: inf, nan, or a value beyond float32 (1e39) in a CSV or a .npy
#   are refused by train, eval, profile and predict alike, naming the file
#   and where (eval and predict used to run on them);
# - --batch: 0 and negative sizes are refused by export as by train, eval
#   and compile (export took 0 for "the recipe's batch");
# - TWB_MEMORY_LIMIT: digits and one suffix, more than 0, within 2^64; any
#   other value is ignored with a warning naming it (strtoull read '-1' as
#   2^64 - 1 and ' 5G' as 5G; 0 meant no limit without a word).
set -u
twb=$1
assets=$2
here=$(dirname "$0")
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
# expect NAME STATUS REGEX CMD...: the exit status and the message.
expect () {
  local name=$1 want_st=$2 want=$3
  shift 3
  local out st
  out=$("$@" 2>&1); st=$?
  if [ $st = "$want_st" ] && grep -qE -- "$want" <<<"$out"; then ok "$name"; else not_ok "$name" "exit $st: $out"; fi
}

echo "1..33"
m="$assets/models/spirals.json"
"$twb" train "$m" --max-steps 2 --no-eval -q --checkpoint "$tmp/ck.st" >/dev/null 2>&1
$py "$here/st-edit.py" "$tmp/ck.st" "$tmp/int.st" "dtype=*:I64"
$py "$here/st-edit.py" "$tmp/ck.st" "$tmp/f64.st" "dtype=*:F64"
if [ -s "$tmp/int.st" ] && [ -s "$tmp/f64.st" ]; then ok "fixtures: a checkpoint, as i64 and as f64"; else not_ok "fixtures"; fi
$py - "$tmp" <<'PY'
import struct, sys
d = sys.argv[1]
def npy(path, descr, shape, raw):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    h += ' ' * (63 - (10 + len(h)) % 64) + '\n'
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + raw)
for name, v in (("nan", float("nan")), ("inf", float("inf")), ("big", 1e39)):
    npy("%s/%s.npy" % (d, name), "<f8", "(3, 2)", struct.pack("<6d", 0.5, 0.25, 1, v, 0, 0))
    npy("%s/%s_labels.npy" % (d, name), "<i8", "(3,)", struct.pack("<3q", 0, 1, 0))
npy(d + "/ok.npy", "<f8", "(3, 2)", struct.pack("<6d", 0.5, 0.25, 1, 2, 0, 0))
npy(d + "/ok_labels.npy", "<i8", "(3,)", struct.pack("<3q", 0, 1, 0))
open(d + "/big.csv", "w").write("x,y,label\n0.5,0.25,0\n1,1e39,1\n")
PY

dt="tensor '[a-z0-9_.]+' is i64; the model's (parameter|buffer) is f32"
expect "eval: integer weights refused" 1 "int.st: $dt" "$twb" eval "$m" --weights "$tmp/int.st"
expect "predict: integer weights refused" 1 "int.st: $dt" \
  "$twb" predict "$m" --weights "$tmp/int.st" --input "$tmp/ok.npy"
expect "export: integer weights refused" 1 "int.st: $dt" \
  "$twb" export "$m" --weights "$tmp/int.st" -o "$tmp/x.onnx"
expect "train --init-weights: integer weights refused" 1 "int.st: $dt" \
  "$twb" train "$m" --max-steps 1 -q --no-eval --init-weights "$tmp/int.st"
expect "train --resume: an integer checkpoint refused" 1 "int.st: $dt" \
  "$twb" train "$m" --max-steps 3 -q --no-eval --resume "$tmp/int.st"
expect "eval: f64 weights still load" 0 "test accuracy" "$twb" eval "$m" --weights "$tmp/f64.st"
expect "predict: f64 weights still load" 0 "^0	" \
  "$twb" predict "$m" --weights "$tmp/f64.st" --input "$tmp/ok.npy"

for v in nan inf big; do
  what=$([ $v = nan ] && echo nan || echo inf)
  want="$v.npy: sample 1, value 1 is $what as f32: samples must be finite numbers"
  expect "train: $v in .npy features refused" 1 "$want" \
    "$twb" train "$m" --max-steps 1 -q --no-eval --data "$tmp/$v.npy"
  expect "eval: $v in .npy features refused" 1 "$want" \
    "$twb" eval "$m" --weights "$tmp/ck.st" --data "$tmp/$v.npy"
  expect "predict: $v in --input refused" 1 "$want" \
    "$twb" predict "$m" --weights "$tmp/ck.st" --input "$tmp/$v.npy"
done
want='big.csv: line 3, column 2: “1e39” is beyond the range of float32'
expect "train: 1e39 in a CSV refused" 1 "$want" "$twb" train "$m" --max-steps 1 -q --data "$tmp/big.csv"
expect "eval: 1e39 in a CSV refused" 1 "$want" "$twb" eval "$m" --weights "$tmp/ck.st" --data "$tmp/big.csv"
expect "profile: 1e39 in a CSV refused" 1 "$want" \
  "$twb" profile "$m" --steps 1 --data "$tmp/big.csv" --trace "$tmp/t.json"

want="--batch: '0' is not valid \(expected a whole number in \[1, 2147483647\]\)"
expect "export --batch 0 refused as train's" 2 "$want" "$twb" export "$m" -o "$tmp/b.onnx" --batch 0
expect "train --batch 0 refused" 2 "$want" "$twb" train "$m" --max-steps 1 -q --batch 0
expect "export --batch -5 refused" 2 "--batch: '-5' is not valid" "$twb" export "$m" -o "$tmp/b.onnx" --batch -5
# The memory limit: a bad value is named and ignored (the run goes on);
# a good one is applied (1k refuses the run, naming the variable).
for v in -1 " 5G" 0 0k 5x 5GB 99999999999999999999 17179869184T; do
  expect "TWB_MEMORY_LIMIT='$v' ignored with a warning" 0 \
    "TWB_MEMORY_LIMIT=$v is not a positive byte count.*ignored" \
    env TWB_MEMORY_LIMIT="$v" "$twb" train "$m" --max-steps 1 -q --no-eval
done
expect "TWB_MEMORY_LIMIT=1k applied" 1 "of memory is available \\(TWB_MEMORY_LIMIT\\)" \
  env TWB_MEMORY_LIMIT=1k "$twb" train "$m" --max-steps 1 -q --no-eval
[ ! -e "$tmp/b.onnx" ] && [ ! -e "$tmp/x.onnx" ] && [ ! -e "$tmp/t.json" ] \
  && ok "no refused command wrote its output" || not_ok "no refused command wrote its output" "$(ls "$tmp")"
exit $fail
