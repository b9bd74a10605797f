#!/usr/bin/env bash
# bench/sim-table.sh [TWB] — the simulator's reference table: 8 nodes × 8
# H100 (NVLink in a node, InfiniBand across) training LeNet-5 and the
# 4096-wide MLP, for each all-reduce algorithm × update strategy: the
# predicted step time, communication share, exposed communication and
# memory per device (time mode, 64 ranks), and the test accuracy that
# train mode reaches with 8 virtual ranks in this process (STEPS steps;
# the all-reduce algorithm does not change the arithmetic, so accuracy is
# per strategy).  Prints markdown tables; figures go in the notes.
#
#   bench/sim-table.sh build/app/twb            STEPS=300 by default
set -u
twb=${1:-build/app/twb}
steps=${STEPS:-300}
here=$(cd "$(dirname "$0")/.." && pwd)
py () { /usr/bin/python3 -c "$@"; }
strategies=("sync:" "async:--async 2" "topk:--compress topk:0.01" "int8:--compress int8")
for model in lenet5 mlp-gemm; do
  m=$here/assets/models/$model.json
  echo
  echo "### $model, 8 × 8 H100 (nvlink+ib), 64 ranks, time mode"
  echo
  echo "| algo | strategy | step ms | samples/s | comm share | exposed ms | memory/device |"
  echo "|---|---|---|---|---|---|---|"
  for algo in ring tree ps hier; do
    for s in "${strategies[@]}"; do
      name=${s%%:*}; opts=${s#*:}
      out=$("$twb" simulate "$m" --nodes 8 --devices-per-node 8 --algo "$algo" $opts --json 2>/dev/null)
      if [ -z "$out" ]; then
        echo "| $algo | $name | (not modelled in time mode) | | | | |"
        continue
      fi
      py 'import json, sys
c = json.loads(sys.argv[1])["configs"][0]
print("| %s | %s | %.3f | %.0f | %.0f%% | %.3f | %.1f MB |" % (sys.argv[2], sys.argv[3], c["step_ms"], c["samples_per_s"], 100 * c["comm_ms"] / c["step_ms"], c["exposed_comm_ms"], c["memory_per_device"]["total"] / 1e6))' "$out" "$algo" "$name"
    done
  done
done
echo
echo "### Test accuracy in train mode: lenet5, 8 virtual ranks, $steps steps (this machine)"
echo
echo "| strategy | test accuracy | virtual s | wall s |"
echo "|---|---|---|---|"
for s in "${strategies[@]}"; do
  name=${s%%:*}; opts=${s#*:}
  out=$("$twb" simulate "$here/assets/models/lenet5.json" --mode train --nodes 1 --devices-per-node 8 \
          --max-steps "$steps" $opts --json 2>/dev/null)
  py 'import json, sys
d = json.loads(sys.argv[1])
print("| %s | %.4f | %.3f | %.1f |" % (sys.argv[2], d["test_accuracy"], d["virtual_s"], d["wall_s"]))' "$out" "$name" 2>/dev/null \
    || echo "| $name | (failed) | | |"
done
