#!/usr/bin/env bash
# test-twb-pipe.sh TWB ASSETS — twb train --parallel pipeline / hybrid end to
# end (TAP): the MLP trained 30 steps on 2 ranks (2 stages) and on 4 (2 × 2,
# GPipe) reaches the train loss and test accuracy of one process (--json,
# within 1e-5 relative: float32 sums over micro-batches in another order,
# test-pipe.c's argument), reports its bubble, writes a checkpoint of the
# whole model that twb eval scores alike; with --mode compiled the same runs
# reach the eager pipeline's and one process's loss alike (the stages run
# compiled programs: the same kernels on the same micro-batches); bad stages
# and options are refused.  (A model with dropout and batch norm: the
# compiled pipeline's loss is the eager pipeline's.)
set -u
twb=$(realpath "$1")
assets=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! command -v mpirun >/dev/null && ! command -v mpiexec >/dev/null; then
  echo "1..0 # SKIP no mpirun"
  exit 0
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
bad () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
field () { python3 -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1]).get(sys.argv[1]))' "$1"; }
close () { python3 -c 'import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(a-b) <= 1e-5*max(1,abs(a)) else 1)' "$1" "$2"; }

model=$assets/models/mlp.json
one=$("$twb" train "$model" --max-steps 30 --quiet --json 2>&1)
l1=$(echo "$one" | field train_loss)
a1=$(echo "$one" | field test_accuracy)

pp=$("$twb" train "$model" --max-steps 30 --ranks 2 --parallel pipeline --micro-batches 4 \
       --json 2>&1)
lp=$(echo "$pp" | field train_loss)
if close "$l1" "$lp" && [ "$(echo "$pp" | field test_accuracy)" = "$a1" ]; then
  ok "pipeline on 2 ranks: train loss $lp, one process $l1"
else
  bad "pipeline on 2 ranks: train loss $lp against $l1" "$pp"
fi
bub=$(echo "$pp" | field pipeline_bubble)
th=$(echo "$pp" | field pipeline_bubble_theory)
if python3 -c "import sys; b,t=$bub,$th; sys.exit(0 if 0 <= b < 1 and abs(t - 0.2) < 1e-9 else 1)" 2>/dev/null; then
  ok "pipeline bubble $bub reported beside theory $th"
else
  bad "pipeline bubble: $bub, theory $th" "$pp"
fi

hy=$("$twb" train "$model" --max-steps 30 --ranks 4 --parallel hybrid --schedule gpipe \
       --checkpoint "$tmp/ck.safetensors" --json 2>&1)
lh=$(echo "$hy" | field train_loss)
if close "$l1" "$lh"; then
  ok "hybrid 2 x 2, gpipe: train loss $lh, one process $l1"
else
  bad "hybrid 2 x 2: train loss $lh against $l1" "$hy"
fi
ev=$("$twb" eval "$model" --weights "$tmp/ck.safetensors" --json 2>&1)
if [ "$(echo "$ev" | field test_accuracy)" = "$a1" ]; then
  ok "the hybrid run's checkpoint holds the whole model (twb eval: $a1)"
else
  bad "checkpoint of the hybrid run" "$ev"
fi

# A "stage" that names no stage: exit 1, the node named.
python3 - "$model" "$tmp/staged.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for nd in m["graph"]["nodes"]:
    if nd["id"] == "fc2":
        nd.setdefault("attrs", {})["stage"] = 5
json.dump(m, open(sys.argv[2], "w"))
PY
out=$("$twb" train "$tmp/staged.json" --max-steps 2 --ranks 2 --parallel pipeline 2>&1)
rc=$?
if [ $rc -eq 1 ] && echo "$out" | grep -q "node fc2: stage 5 names no stage"; then
  ok "a bad stage attribute fails naming the node"
else
  bad "bad stage attribute: exit $rc" "$out"
fi
pc=$("$twb" train "$model" --max-steps 30 --ranks 2 --parallel pipeline --micro-batches 4 \
       --mode compiled --json 2>&1)
lc=$(echo "$pc" | field train_loss)
if [ "$(echo "$pc" | field mode)" = compiled ] && close "$lp" "$lc" && close "$l1" "$lc" \
   && [ "$(echo "$pc" | field test_accuracy)" = "$a1" ]; then
  ok "compiled pipeline on 2 ranks: train loss $lc, eager pipeline $lp, one process $l1"
else
  bad "compiled pipeline on 2 ranks: train loss $lc against $lp and $l1" "$pc"
fi
hc=$("$twb" train "$model" --max-steps 30 --ranks 4 --parallel hybrid --schedule gpipe \
       --mode compiled --json 2>&1)
lhc=$(echo "$hc" | field train_loss)
if [ "$(echo "$hc" | field mode)" = compiled ] && close "$lh" "$lhc" && close "$l1" "$lhc"; then
  ok "compiled hybrid 2 x 2, gpipe: train loss $lhc, eager hybrid $lh, one process $l1"
else
  bad "compiled hybrid 2 x 2: train loss $lhc against $lh and $l1" "$hc"
fi
# Dropout and batch norm after fc1: the compiled stages' backward uses the
# masks and statistics of their own forward (nothing is recomputed), so
# the losses are the eager pipeline's.
python3 - "$model" "$tmp/drop.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
nodes = []
for nd in m["graph"]["nodes"]:
    nodes.append(nd)
    if nd["id"] == "relu1":
        nodes.append({"id": "drop1", "op": "dropout", "inputs": ["relu1"], "attrs": {"p": 0.3}})
        nodes.append({"id": "bn1", "op": "batch_norm", "inputs": ["drop1"]})
    if nd["id"] == "fc2":
        nd["inputs"] = ["bn1"]
m["graph"]["nodes"] = nodes
json.dump(m, open(sys.argv[2], "w"))
PY
de=$("$twb" train "$tmp/drop.json" --max-steps 20 --ranks 2 --parallel pipeline --json 2>&1)
dc=$("$twb" train "$tmp/drop.json" --max-steps 20 --ranks 2 --parallel pipeline --mode compiled \
       --json 2>&1)
lde=$(echo "$de" | field train_loss)
ldc=$(echo "$dc" | field train_loss)
if close "$lde" "$ldc"; then
  ok "dropout and batch norm, compiled pipeline: train loss $ldc, eager pipeline $lde"
else
  bad "dropout and batch norm, compiled pipeline: train loss $ldc against $lde" "$de" "$dc"
fi
out=$("$twb" train "$model" --ranks 4 --parallel hybrid --stages 3 2>&1)
rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "multiple of the 3 stages"; then
  ok "--stages that does not divide --ranks is refused"
else
  bad "--stages 3 with --ranks 4: exit $rc" "$out"
fi
echo "1..$n"
exit $fail
