#!/usr/bin/env bash
# test-cli-values.sh TWB ASSETS — values twb must refuse rather than take
# silently (TAP): option values out of range (none of them doubles as
# "unset"), the recipe's training.loss (the named loss is the one trained),
# empty training sets, and checkpoints whose metadata is not what twb wrote.
set -u
twb=$1
assets=$2
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }
json_get () { $py -c "import json,sys; print(repr(json.loads(sys.stdin.read().strip().splitlines()[-1])['$1']))"; }
m="$assets/models/spirals.json"

# Option values: a usage error (exit 2) naming the option and the value.
while read -r cmd opt value; do
  case $cmd in
    train) out=$("$twb" train "$m" --max-steps 2 --no-eval -q "$opt" "$value" 2>&1); st=$? ;;
    eval) out=$("$twb" eval "$m" --weights "$tmp/none.st" "$opt" "$value" 2>&1); st=$? ;;
    predict) out=$("$twb" predict "$m" --weights "$tmp/none.st" --input "$tmp/none.npy" "$opt" "$value" 2>&1); st=$? ;;
    compile) out=$("$twb" compile "$m" "$opt" "$value" 2>&1); st=$? ;;
  esac
  pat="${opt#-}: '$value' is not valid"
  check "$cmd $opt $value: refused naming the option" '[ $st = 2 ] && grep -qF -- "$pat" <<<"$out"' "$out"
done <<'CASES'
train --lr nan
train --lr -1
train --lr 0
train --lr inf
train --lr 1e-3x
train --epochs -1
train --epochs 0
train --batch -1
train --batch 2.5
train --val-split -0.5
train --val-split 1
train --max-steps -5
train --max-steps 0
train --threads -1
train --threads 100000
train --seed -1
eval --batch -1
eval --threads -2
predict --threads -1
compile --batch -1
train --batch 2147483648
train --batch 0x10
train --batch 64k
train --epochs 99999999999999999999
train --max-steps 1e3
train --seed 18446744073709551616
train --lr 5abc
train --lr 0x1p-3
train --lr 1e999
eval --batch 0
compile --batch 1.5
CASES
out=$("$twb" train "$m" -b -3 --max-steps 2 2>&1); st=$?
check "a short option is named by its long name" '[ $st = 2 ] && grep -qF -- "--batch: '"'"'-3'"'"'" <<<"$out"' "$out"
out=$("$twb" train "$m" --lr 0.05 --batch 7 --epochs 1 --max-steps 3 --seed 3 --val-split 0.25 --threads 1 --no-eval -q --json 2>&1); st=$?
got=$($py -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(d['batch'], d['steps'])" <<<"$out" 2>/dev/null)
check "valid values are taken (batch 7, 3 steps)" '[ $st = 0 ] && [ "$got" = "7 3" ]' "$out"

# Breakpoints, at the command line and at the prompt: the same rule.
out=$("$twb" train "$m" --max-steps 2 --no-eval -q --break-on step=99999999999999999999 2>&1); st=$?
check "--break-on step past int64: refused naming it" \
  '[ $st = 2 ] && grep -qF "step=N: '"'"'99999999999999999999'"'"' is not valid (expected a whole number in [1, 9223372036854775807])" <<<"$out"' "$out"
out=$("$twb" train "$m" --max-steps 2 --no-eval -q --break-on 'loss>1e999' 2>&1); st=$?
check "--break-on loss>1e999: refused naming it" '[ $st = 2 ] && grep -qF "loss>X: '"'"'1e999'"'"' is not valid" <<<"$out"' "$out"
long=$(head -c 2000 /dev/zero | tr '\0' A)
huge=$(head -c 70000 /dev/zero | tr '\0' B)
out=$(printf 'p %ss\nlr 5abc\nb step=99999999999999999999\nb step=1e3\n%s\nlr 0.5\nq\n' "$long" "$huge" \
  | "$twb" train "$m" --debug --max-steps 3 --no-eval 2>&1); st=$?
steps=$(grep -c "^break:" <<<"$out")
check "--debug: a 2,000-byte line is one command (no tensor, nothing stepped)" \
  '[ $st = 2 ] && grep -qF "no tensor '"'"'$long"s"'"'"'" <<<"$out" && [ "$steps" = 1 ]' "$out"
check "--debug: lr 5abc refused naming the value" 'grep -qF "lr: '"'"'5abc'"'"' is not valid (expected a number > 0)" <<<"$out"' "$out"
check "--debug: b step= past int64 and b step=1e3 refused" \
  '[ $(grep -c "step=N: .* is not valid (expected a whole number in \[1, 9223372036854775807\])" <<<"$out") = 2 ]' "$out"
check "--debug: a 70,000-byte line refused whole, said in one line" \
  '[ $(grep -c "a line of 70000 bytes: commands take at most 65536; ignored" <<<"$out") = 1 ] && ! grep -q "unknown command .B" <<<"$out"' "$out"
out=$(printf 'lr 0.5\nc\n' | "$twb" train "$m" --debug --max-steps 3 --no-eval --json -q 2>&1); st=$?
check "--debug: lr 0.5 taken, the run goes on" '[ $st = 0 ] && grep -q "\"steps\" *: *3" <<<"$out"' "$out"

# Recipe values: the same ranges as the options.
$py -c "
import json
d = json.load(open('$m'))
d['training']['batch_size'] = 2 ** 62
json.dump(d, open('$tmp/batch62.json', 'w'))"
out=$("$twb" train "$tmp/batch62.json" --max-steps 2 --no-eval -q 2>&1); st=$?
check "recipe batch_size 2^62: refused at load naming it" \
  '[ $st = 1 ] && grep -qF "training.batch_size: must be at most 2147483647 (got 4611686018427387904)" <<<"$out"' "$out"
# A batch of 2^31 - 1 on a set of a few thousand samples: each step takes what
# there is, and samples/s times the mean step time is that count, not 2^31.
out=$("$twb" train "$m" --batch 2147483647 --max-steps 2 --no-eval -q --json 2>&1); st=$?
per=$($py -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print(round(d['samples_per_s'] * d['mean_step_ms'] / 1000))" <<<"$out" 2>/dev/null)
check "a batch larger than the data: samples/s counts the samples there were ($per a step)" \
  '[ $st = 0 ] && [ -n "$per" ] && [ "$per" -gt 0 ] && [ "$per" -lt 100000 ]' "$out"

# training.loss: a model with two losses trains the one its recipe names.
cat > "$tmp/two.json" <<'JSON'
{"format": "twb-model", "version": 1, "graph": {"nodes": [
 {"id": "x", "op": "input", "attrs": {"shape": [2], "role": "data"}},
 {"id": "y", "op": "input", "attrs": {"shape": [], "dtype": "i64", "role": "label"}},
 {"id": "fc1", "op": "linear", "inputs": ["x"], "attrs": {"out_features": 8}},
 {"id": "t", "op": "tanh", "inputs": ["fc1"]},
 {"id": "fc2", "op": "linear", "inputs": ["t"], "attrs": {"out_features": 2}},
 {"id": "fc3", "op": "linear", "inputs": ["t"], "attrs": {"out_features": 2}},
 {"id": "first", "op": "cross_entropy", "inputs": ["fc2", "y"]},
 {"id": "second", "op": "cross_entropy", "inputs": ["fc3", "y"]}], "outputs": ["fc3"]},
 "training": {"dataset": "spirals", "batch_size": 16, "loss": "second"}}
JSON
$py -c "
import json
d = json.load(open('$tmp/two.json'))
d['graph']['nodes'] = [n for n in d['graph']['nodes'] if n['id'] != 'first']
json.dump(d, open('$tmp/only-second.json', 'w'))
d = json.load(open('$tmp/two.json'))
d['training']['loss'] = 'first'
json.dump(d, open('$tmp/first.json', 'w'))
for bad, name in (('fc2', 'not-a-loss'), ('nope', 'unknown-loss')):
    d['training']['loss'] = bad
    json.dump(d, open('$tmp/%s.json' % name, 'w'))"
for mode in eager compiled; do
  l2=$("$twb" train "$tmp/two.json" --max-steps 5 --no-eval -q --json --mode $mode 2>&1 | json_get train_loss)
  lo=$("$twb" train "$tmp/only-second.json" --max-steps 5 --no-eval -q --json --mode $mode 2>&1 | json_get train_loss)
  l1=$("$twb" train "$tmp/first.json" --max-steps 5 --no-eval -q --json --mode $mode 2>&1 | json_get train_loss)
  check "training.loss \"second\" trains the second loss ($mode: $l2 = $lo, first gives $l1)" \
    '[ -n "$l2" ] && [ "$l2" = "$lo" ] && [ "$l1" != "$l2" ]'
done
out=$("$twb" train "$tmp/not-a-loss.json" --max-steps 1 2>&1); st=$?
check "training.loss naming a linear node: refused at load, naming it" \
  '[ $st = 1 ] && grep -q "training.loss: node \"fc2\" is a linear, not a loss" <<<"$out"' "$out"
out=$("$twb" train "$tmp/unknown-loss.json" --max-steps 1 2>&1); st=$?
check "training.loss naming no node: refused at load, naming it" \
  '[ $st = 1 ] && grep -q "training.loss: no node \"nope\"" <<<"$out"' "$out"

# Empty training sets are errors, not "train loss nan".
$py -c "
import struct
def npy(path, descr, shape, values, code):
    hdr = \"{'descr': '%s', 'fortran_order': False, 'shape': %s, }\" % (descr, shape)
    hdr += ' ' * (63 - (10 + len(hdr)) % 64) + chr(10)
    open(path, 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr.encode()
                           + struct.pack('<%d%s' % (len(values), code), *values))
npy('$tmp/empty.npy', '<f4', '(0, 2)', [], 'f')
npy('$tmp/empty_labels.npy', '<i8', '(0,)', [], 'q')
npy('$tmp/one.npy', '<f4', '(1, 2)', [0.5, 0.5], 'f')
npy('$tmp/one_labels.npy', '<i8', '(1,)', [1], 'q')
npy('$tmp/two.npy', '<f4', '(2, 2)', [0.5, 0.5, -0.5, 0.25], 'f')
npy('$tmp/two_labels.npy', '<i8', '(2,)', [0, 1], 'q')"
out=$("$twb" train "$m" --data "$tmp/empty.npy" --max-steps 2 2>&1); st=$?
check "a training set of no samples: exit 1" '[ $st = 1 ] && grep -qE "empty.npy(: no training samples| holds no samples)" <<<"$out"' "$out"
out=$("$twb" train "$m" --data "$tmp/one.npy" --val-split 0.5 --max-steps 2 2>&1); st=$?
check "a validation split that leaves no training sample: exit 1" \
  '[ $st = 1 ] && grep -q "no training samples left after the validation split" <<<"$out"' "$out"
out=$("$twb" train "$m" --data "$tmp/two.npy" --val-split 0.1 --max-steps 2 2>&1); st=$?
check "a validation split that holds out no sample: exit 1" \
  '[ $st = 1 ] && grep -q "validation split of 0.1 holds out none of the 2" <<<"$out"' "$out"

# Checkpoint metadata: checked on --resume before anything runs; nothing is
# trained, no checkpoint written, no GLib CRITICAL.
"$twb" train "$m" --max-steps 2 --no-eval -q --optimizer adam --checkpoint "$tmp/ck.st" >/dev/null 2>&1
out=$("$twb" train "$m" --max-steps 4 --no-eval -q --optimizer adam --resume "$tmp/ck.st" --checkpoint "$tmp/ok.st" 2>&1); st=$?
check "an untouched checkpoint resumes" '[ $st = 0 ] && [ -s "$tmp/ok.st" ]' "$out"
while read -r edit expect; do
  $py "$here/st-edit.py" "$tmp/ck.st" "$tmp/bad.st" "$edit"
  rm -f "$tmp/out.st"
  out=$("$twb" train "$m" --max-steps 4 --no-eval -q --optimizer adam --resume "$tmp/bad.st" --checkpoint "$tmp/out.st" 2>&1); st=$?
  check "--resume with $edit: refused ($expect), nothing trained" \
    '[ $st = 1 ] && grep -qF -- "$expect" <<<"$out" && grep -q bad.st <<<"$out" && ! grep -q CRITICAL <<<"$out" && [ ! -e "$tmp/out.st" ]' "$out"
done <<'CASES'
meta=optimizer_step:-3 "optimizer_step" is "-3"
meta=step:abc "step" is "abc"
meta=step:99999999999999999999 "step" is "99999999999999999999"
meta=step:9007199254740993 "step" is "9007199254740993"
meta=epoch:-1 "epoch" is "-1"
meta=batch:1.5 "batch" is "1.5"
meta=seed:x "seed" is "x"
meta=format: not a twb checkpoint
meta=format:other format "other"
shape=optimizer.fc1.weight.0:3 optimizer state 'optimizer.fc1.weight.0' is f32 [3]
dtype=optimizer.fc1.bias.1:I64 optimizer state 'optimizer.fc1.bias.1' is i64
drop=fc2.bias no tensor 'fc2.bias'
CASES

echo "1..$n"
exit $fail
