#!/usr/bin/env bash
# test-init-weights.sh TWB ASSETS — `twb train --init-weights` (TAP).
#
# The checked-in fixture (data/tiny-bn.*, written by data/gen-tiny-bn.py with
# PyTorch) is a conv + batch norm + linear net's state_dict as torch saves
# it, with moved running statistics and num_batches_tracked: twb's first-step
# loss and its eval loss after that step (which reads the running statistics
# the step updated) must be PyTorch's.  Then the keys torch's load_state_dict
# reports (missing, unexpected, --strict), shapes and dtypes; and, where
# Debian's python3-torch is installed, a fresh state_dict of the MLP from
# torch, trained three SGD steps by both.
#
# Tolerances: relative 1e-5 on losses of a few hundred f32 operations
# (float32 rounding, 6e-8 per operation, summed in different orders by the
# two programs).
set -u
twb=$1
assets=$2
here=$(cd "$(dirname "$0")" && pwd)
data=$here/data
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' <<<"$2"; }
skip () { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check () { if eval "$2"; then ok "$1"; else not_ok "$1" "${3:-}"; fi; }
last_json () { $py -c "import json,sys; d=json.loads(sys.stdin.read().strip().splitlines()[-1]); print($1)" 2>/dev/null; }
close () { $py -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(abs(a - b) <= $3 * abs(b))" "$1" "$2" 2>/dev/null; }

tiny="$data/tiny-bn.json"
st="$data/tiny-bn.safetensors"
want=$($py -c "import json; d=json.load(open('$data/tiny-bn-expected.json')); print(d['first_step_loss'], d['eval_loss_after'])")
read -r want_loss want_eval <<<"$want"
train_tiny () { "$twb" train "$tiny" --data "$data/tiny-bn-x.npy" --max-steps 1 --json "$@"; }

for mode in eager compiled; do
  out=$(train_tiny --init-weights "$st" --strict --mode $mode 2>&1); st_=$?
  got=$(last_json "d['train_loss'], d['test_loss']" <<<"$out")
  read -r loss evl <<<"$got"
  check "fixture, $mode: first-step loss is PyTorch's ($loss vs $want_loss)" \
    '[ $st_ = 0 ] && [ "$(close "$loss" "$want_loss" 1e-5)" = True ]' "$out"
  check "fixture, $mode: eval loss after the step is PyTorch's: running statistics loaded and updated ($evl vs $want_eval)" \
    '[ "$(close "$evl" "$want_eval" 1e-5)" = True ]' "$out"
done
rep=$(last_json "d['init_weights']['missing_keys'], d['init_weights']['unexpected_keys'], d['init_weights']['ignored_keys'], len(d['init_weights']['loaded_keys'])" <<<"$out")
check "fixture: nothing missing or unexpected; num_batches_tracked ignored; 7 tensors loaded" \
  "[ \"\$rep\" = \"[] [] ['bn.num_batches_tracked'] 7\" ]" "$out"
check "fixture: stderr says how many tensors loaded" 'grep -q "initial weights from .*tiny-bn.safetensors: 7 tensors loaded" <<<"$out"' "$out"
out=$(train_tiny 2>&1)
loss=$(last_json "d['train_loss']" <<<"$out")
check "without --init-weights the loss differs (the fixture's weights are what is used)" \
  '[ -n "$loss" ] && [ "$(close "$loss" "$want_loss" 1e-3)" = False ]' "$out"

# F64 values are converted.
$py "$here/st-edit.py" "$st" "$tmp/f64.st" "dtype=*:F64"
out=$(train_tiny --init-weights "$tmp/f64.st" 2>&1); st_=$?
loss=$(last_json "d['train_loss']" <<<"$out")
check "an F64 state_dict loads converted to f32" '[ $st_ = 0 ] && [ "$(close "$loss" "$want_loss" 1e-6)" = True ]' "$out"

# Missing and unexpected keys: reported, as load_state_dict does.
$py "$here/st-edit.py" "$st" "$tmp/missing.st" drop=fc.bias drop=bn.running_var
out=$(train_tiny --init-weights "$tmp/missing.st" 2>&1); st_=$?
rep=$(last_json "d['init_weights']['missing_keys']" <<<"$out")
check "missing keys: trained anyway, listed on stderr and in --json (model order)" \
  "[ \$st_ = 0 ] && grep -q 'missing keys: bn.running_var, fc.bias (they keep their initial values)' <<<\"\$out\" && [ \"\$rep\" = \"['bn.running_var', 'fc.bias']\" ]" "$out"
$py "$here/st-edit.py" "$st" "$tmp/extra.st" add=head.weight add=bn.extra
out=$(train_tiny --init-weights "$tmp/extra.st" 2>&1); st_=$?
rep=$(last_json "d['init_weights']['unexpected_keys']" <<<"$out")
loss=$(last_json "d['train_loss']" <<<"$out")
check "unexpected keys: listed on stderr and in --json; the rest loads" \
  "[ \$st_ = 0 ] && grep -q 'unexpected keys: bn.extra, head.weight (not used)' <<<\"\$out\" && [ \"\$rep\" = \"['bn.extra', 'head.weight']\" ] && [ \"\$(close \"\$loss\" \"\$want_loss\" 1e-5)\" = True ]" "$out"
for f in missing extra; do
  rm -f "$tmp/ck.st"
  out=$(train_tiny --init-weights "$tmp/$f.st" --strict --checkpoint "$tmp/ck.st" 2>&1); st_=$?
  check "--strict with $f keys: exit 1 naming them, nothing trained" \
    '[ $st_ = 1 ] && grep -q "strict loading refused: .*\(fc.bias\|head.weight\)" <<<"$out" && [ ! -e "$tmp/ck.st" ]' "$out"
done

# Shapes and dtypes: errors naming the key.
$py "$here/st-edit.py" "$st" "$tmp/shape.st" shape=fc.weight:3,47
out=$(train_tiny --init-weights "$tmp/shape.st" 2>&1); st_=$?
check "a shape mismatch: exit 1 naming the key and both shapes" \
  '[ $st_ = 1 ] && grep -q "shape.st: tensor .fc.weight. has shape \[3, 47\]; the model.s parameter is \[3, 48\]" <<<"$out"' "$out"
$py "$here/st-edit.py" "$st" "$tmp/i64.st" dtype=fc.weight:I64
out=$(train_tiny --init-weights "$tmp/i64.st" 2>&1); st_=$?
check "integer values for a parameter: exit 1 naming the key and the dtypes" \
  '[ $st_ = 1 ] && grep -q "tensor .fc.weight. is i64; the model.s parameter is f32" <<<"$out"' "$out"
$py "$here/st-edit.py" "$st" "$tmp/f16.st" dtype=fc.weight:F16
out=$(train_tiny --init-weights "$tmp/f16.st" 2>&1); st_=$?
check "F16 (no engine dtype): exit 1 naming the key and the dtype" \
  '[ $st_ = 1 ] && grep -q "fc.weight.*F16" <<<"$out"' "$out"

# Usage.
out=$(train_tiny --init-weights "$st" --resume "$st" 2>&1); st_=$?
check "--init-weights with --resume: usage error" '[ $st_ = 2 ] && grep -q "exclude each other" <<<"$out"' "$out"
out=$(train_tiny --strict 2>&1); st_=$?
check "--strict without --init-weights: usage error" '[ $st_ = 2 ]' "$out"

# A fresh state_dict from PyTorch: the MLP built by torch (same names), its
# default initialisation, three full-batch SGD steps by both.
if $py -c "import torch" 2>/dev/null; then
  res=$($py - "$assets/models/mlp.json" "$tmp" "$here/../../bench" <<'EOF'
import json, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[3])
import twb_torch
torch.manual_seed(7)
model = json.load(open(sys.argv[1]))
net = twb_torch.module_class(torch)(model)
twb_torch.save_safetensors(net.state_dict(), sys.argv[2] + "/mlp-init.safetensors")
x = torch.rand(64, 1, 28, 28)
y = torch.arange(64) % 10
np.save(sys.argv[2] + "/d.npy", x.numpy())
np.save(sys.argv[2] + "/d_labels.npy", y.numpy())
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)   # the recipe's
losses = []
for _ in range(3):
    _, loss = net(x, y)
    losses.append(loss.item())
    opt.zero_grad()
    loss.backward()
    opt.step()
print(losses[0], losses[2])
EOF
)
  read -r t1 t3 <<<"$res"
  for mode in eager compiled; do
    l1=$("$twb" train "$assets/models/mlp.json" --data "$tmp/d.npy" --batch 64 --max-steps 1 --no-eval -q --json --init-weights "$tmp/mlp-init.safetensors" --strict --mode $mode 2>/dev/null | last_json "d['train_loss']")
    l3=$("$twb" train "$assets/models/mlp.json" --data "$tmp/d.npy" --batch 64 --epochs 3 --no-eval -q --json --init-weights "$tmp/mlp-init.safetensors" --strict --mode $mode 2>/dev/null | last_json "d['train_loss']")
    check "torch-made MLP state_dict, $mode: first-step loss is torch's ($l1 vs $t1)" \
      '[ -n "$t1" ] && [ "$(close "$l1" "$t1" 1e-5)" = True ]'
    check "torch-made MLP state_dict, $mode: third-step loss is torch's ($l3 vs $t3)" \
      '[ -n "$t3" ] && [ "$(close "$l3" "$t3" 1e-5)" = True ]'
  done
else
  for i in 1 2 3 4; do skip "torch-made MLP state_dict" "python3-torch is not installed"; done
fi

echo "1..$n"
exit $fail
