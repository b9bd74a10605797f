#!/usr/bin/env bash
# test-dist.sh TWB ASSETS — twb train --ranks as a user runs it (TAP): data
# parallel on 2 and 4 processes gives one process's loss; bad options are
# refused naming the option; a model that differs on one rank is refused
# naming the rank; a rank killed mid-run or hung ends the run within the
# time-out, named; twb profile --ranks writes one trace of every rank.
set -u
twb=$(realpath "$1")
assets=$(realpath "$2")
tmp=$(mktemp -d)
cleanup () {
  # Nothing of ours outlives the test (a stopped rank, an mpirun).
  pkill -CONT -f "$tmp" 2>/dev/null
  pkill -KILL -f "$tmp" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export OMPI_MCA_rmaps_base_oversubscribe=1
if ! command -v mpirun >/dev/null; then
  echo "1..0 # SKIP Open MPI's mpirun is not installed"
  exit 0
fi
n=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
fail () { n=$((n + 1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
check () { if eval "$2"; then ok "$1"; else fail "$1" "${3:-}"; fi; }

cp "$assets/models/spirals.json" "$tmp/spirals.json"
model=$tmp/spirals.json
json_get () { /usr/bin/python3 -c "import json,sys; print(json.loads(sys.stdin.read())['$1'])"; }

# One process and 2 / 4 ranks: the loss of the same global batches agrees to
# float32 reduction-order rounding (the engine test bounds the weights by
# 1e-4 relative; the loss here by 1e-5 relative, measured ~1e-8).
one=$("$twb" train "$model" --max-steps 20 --json 2>"$tmp/one.err")
for spec in "2 eager mpi" "4 compiled ring" "4 eager hier"; do
  set -- $spec
  out=$("$twb" train "$model" --max-steps 20 --json --ranks "$1" --mode "$2" --algo "$3" \
          --ranks-per-node 2 --bucket-mb 0.001 --checkpoint "$tmp/ck-$1-$2.safetensors" \
          2>"$tmp/r.err")
  rc=$?
  a=$(echo "$one" | json_get train_loss 2>/dev/null)
  b=$(echo "$out" | json_get train_loss 2>/dev/null)
  check "--ranks $1 --mode $2 --algo $3: exit 0, one JSON object (rank 0's)" \
    "[ $rc -eq 0 ] && [ \$(echo \"\$out\" | grep -c '^{') -eq 1 ]" "rc $rc: $(head -c 400 "$tmp/r.err")"
  check "--ranks $1 --mode $2 --algo $3: the loss of one process ($a vs $b)" \
    "/usr/bin/python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-5 * abs(a))' '$a' '$b'"
  check "--ranks $1: the checkpoint is written (by rank 0), no temporary left" \
    "[ -s '$tmp/ck-$1-$2.safetensors' ] && [ -z \"\$(ls '$tmp' | grep -F '.tmp-')\" ]"
done

# Update strategies.  Figures measured on this model (spirals, Adam, lr 0.01,
# batch 32): synchronous 0.958 test accuracy after 20 epochs.
acc () { echo "$1" | json_get test_accuracy 2>/dev/null; }
ge () { /usr/bin/python3 -c 'import sys; sys.exit(not float(sys.argv[1]) >= float(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
# Local SGD with H = 1 is synchronous SGD (an SGD recipe: the update is linear).
/usr/bin/python3 - "$model" "$tmp/sgd.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["training"]["optimizer"] = {"type": "sgd", "lr": 0.1, "momentum": 0.9, "weight_decay": 0}
json.dump(m, open(sys.argv[2], "w"))
PY
a=$("$twb" train "$tmp/sgd.json" --max-steps 30 --ranks 2 --json 2>/dev/null | json_get train_loss)
b=$("$twb" train "$tmp/sgd.json" --max-steps 30 --ranks 2 --local-sgd 1 --json 2>/dev/null | json_get train_loss)
check "--local-sgd 1 equals synchronous SGD ($a vs $b)" \
  "/usr/bin/python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(abs(a - b) > 1e-5 * abs(a))' '$a' '$b'"
# Bounded staleness: K = 2 changes the curve and still learns (measured 0.81-0.85).
sync3=$("$twb" train "$model" --epochs 20 --ranks 3 --json 2>/dev/null)
async3=$("$twb" train "$model" --epochs 20 --ranks 3 --async 2 --json 2>"$tmp/a.err")
check "--async 2: converges (test accuracy $(acc "$async3") >= 0.7) on a curve of its own, staleness reported" \
  "ge '$(acc "$async3")' 0.7 && [ '$(echo "$async3" | json_get train_loss)' != '$(echo "$sync3" | json_get train_loss)' ] && ge '$(echo "$async3" | json_get staleness_max)' 1" \
  "$async3 $(head -c 300 "$tmp/a.err")"
# Top-k at 1%: at most 10% of the dense all-reduce's bytes (measured 2% at 2
# ranks), and the model still learns it: with error feedback the sparse
# updates are about 3x smaller steps for Adam, so the run takes 3x the rate
# and 60 epochs (measured 0.903).
tk=$("$twb" train "$model" --epochs 60 --lr 0.03 --ranks 2 --compress topk:0.01 --json 2>"$tmp/t.err")
check "--compress topk:0.01: <= 10% of the bytes, test accuracy $(acc "$tk") >= 0.85" \
  "ge '$(acc "$tk")' 0.85 && /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(not d[\"comm_sent_bytes_per_step\"] <= 0.1 * d[\"comm_payload_bytes_per_step\"])' '$tk'" \
  "$tk $(head -c 300 "$tmp/t.err")"
for spec in int8 powersgd:2; do
  out=$("$twb" train "$model" --epochs 20 --ranks 2 --compress $spec --json 2>/dev/null)
  check "--compress $spec: test accuracy $(acc "$out") >= 0.9 (measured 0.92-0.95), fewer bytes" \
    "ge '$(acc "$out")' 0.9 && /usr/bin/python3 -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(not d[\"comm_sent_bytes_per_step\"] < 0.3 * d[\"comm_payload_bytes_per_step\"])' '$out'" "$out"
done

# A checkpoint of 2 ranks resumes, on 2 ranks or alone, as the run that did
# not stop (the same batches from the same step).
"$twb" train "$model" --epochs 2 --ranks 2 --checkpoint "$tmp/half.safetensors" -q >/dev/null 2>&1
whole=$("$twb" train "$model" --epochs 4 --ranks 2 --json 2>/dev/null | json_get train_loss)
again=$("$twb" train "$model" --epochs 4 --ranks 2 --resume "$tmp/half.safetensors" --json 2>/dev/null | json_get train_loss)
alone=$("$twb" train "$model" --epochs 4 --resume "$tmp/half.safetensors" --json 2>/dev/null | json_get train_loss)
check "--ranks 2 --resume: the uninterrupted run's loss ($whole; resumed $again, alone $alone)" \
  "/usr/bin/python3 -c 'import sys; w, a, b = map(float, sys.argv[1:]); sys.exit(abs(w - a) > 1e-6 * abs(w) or abs(w - b) > 1e-5 * abs(w))' '$whole' '$again' '$alone'"

# ZeRO-1: the sharded optimizer trains as one process (Adam: two moments),
# each rank holding half of the state at 2 ranks; its checkpoint (gathered,
# written by rank 0) resumes sharded on 3 ranks or alone as the run that
# did not stop.
z=$("$twb" train "$model" --max-steps 20 --json --ranks 2 --shard-optimizer --bucket-mb 0.002 2>"$tmp/z.err")
full=$("$twb" train "$model" --max-steps 20 --json --ranks 2 --bucket-mb 0.002 2>/dev/null)
check "--shard-optimizer: the loss of one process, half the optimizer state per rank" \
  "/usr/bin/python3 -c 'import json, sys; o, z, f = (json.loads(a) for a in sys.argv[1:]); sys.exit(not (abs(o[\"train_loss\"] - z[\"train_loss\"]) <= 1e-5 * abs(o[\"train_loss\"]) and z[\"shard_optimizer\"] and 0.45 < z[\"optimizer_state_bytes\"] / f[\"optimizer_state_bytes\"] < 0.55))' '$one' '$z' '$full'" \
  "$z $(head -c 300 "$tmp/z.err")"
"$twb" train "$model" --epochs 2 --ranks 2 --shard-optimizer --checkpoint "$tmp/zhalf.safetensors" -q >/dev/null 2>&1
zagain=$("$twb" train "$model" --epochs 4 --ranks 3 --shard-optimizer --resume "$tmp/zhalf.safetensors" --json 2>/dev/null | json_get train_loss)
zalone=$("$twb" train "$model" --epochs 4 --resume "$tmp/zhalf.safetensors" --json 2>/dev/null | json_get train_loss)
check "--shard-optimizer --resume: the uninterrupted run's loss ($whole; on 3 ranks $zagain, alone $zalone)" \
  "/usr/bin/python3 -c 'import sys; w, a, b = map(float, sys.argv[1:]); sys.exit(abs(w - a) > 1e-5 * abs(w) or abs(w - b) > 1e-5 * abs(w))' '$whole' '$zagain' '$zalone'"

# Bad options: exit 2, the option named, nothing started.
bad () {
  local what=$1 want=$2; shift 2
  "$twb" train "$model" --max-steps 2 "$@" >"$tmp/bad.out" 2>"$tmp/bad.err"
  local rc=$?
  check "$what: exit 2 naming it" "[ $rc -eq 2 ] && grep -q -e '$want' '$tmp/bad.err'" \
    "rc $rc: $(head -c 300 "$tmp/bad.err")"
}
bad "--ranks 0" "--ranks" --ranks 0
bad "--ranks above the batch" "cannot be split into 64" --ranks 64
bad "--algo unknown" "unknown all-reduce algorithm" --ranks 2 --algo fast
bad "--parallel unknown" "--parallel model" --ranks 2 --parallel model
bad "--comm-timeout 0" "--comm-timeout" --ranks 2 --comm-timeout 0
bad "--bucket-mb -1" "--bucket-mb" --ranks 2 --bucket-mb -1
bad "--ranks-per-node 0" "--ranks-per-node" --ranks 2 --ranks-per-node 0
bad "--shard-optimizer --compress" "--shard-optimizer.*--compress" --ranks 2 --shard-optimizer --compress int8
bad "--shard-optimizer --parallel pipeline" "--shard-optimizer.*pipeline" --ranks 2 --shard-optimizer --parallel pipeline
bad "--debug with --ranks" "one process" --ranks 2 --debug
bad "--compress unknown" "--compress" --ranks 2 --compress zip
bad "--async with --local-sgd" "choose one" --ranks 2 --async 1 --local-sgd 2
bad "--async with one rank" "--async needs" --ranks 1 --async 1
bad "--compress with a pipeline" "goes with --parallel data" --ranks 2 --parallel pipeline --compress int8
PATH=/nonexistent "$twb" train "$model" --ranks 2 >"$tmp/bad.out" 2>"$tmp/bad.err"
rc=$?
check "mpirun missing: exit 2, says what to install" \
  "[ $rc -eq 2 ] && grep -q 'openmpi-bin' '$tmp/bad.err'" "rc $rc: $(cat "$tmp/bad.err")"

# Ranks that load different models: refused at start, the rank named.
sed 's/"lr": *[0-9.e-]*/"lr": 0.5/' "$model" > "$tmp/other.json"
if cmp -s "$model" "$tmp/other.json"; then
  /usr/bin/python3 - "$model" "$tmp/other.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m.setdefault("training", {}).setdefault("optimizer", {})["lr"] = 0.5
json.dump(m, open(sys.argv[2], "w"))
PY
fi
timeout 60 mpirun --allow-run-as-root -np 1 "$twb" train "$model" --max-steps 2 : \
  -np 1 "$twb" train "$tmp/other.json" --max-steps 2 >"$tmp/mm.out" 2>"$tmp/mm.err"
rc=$?
check "different models on two ranks: refused at start naming rank 1" \
  "[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q 'rank 1 has a different model' '$tmp/mm.err'" \
  "rc $rc: $(head -c 400 "$tmp/mm.err")"

# Find rank R of a run whose command line holds $tmp.
rank_pid () {
  for p in $(pgrep -f "twb train $tmp"); do
    if tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$p"
      return
    fi
  done
}
wait_rank () {
  for _ in $(seq 100); do
    p=$(rank_pid "$1")
    [ -n "$p" ] && { sleep 1; echo "$p"; return; }
    sleep 0.1
  done
}

# A rank killed mid-run: the others stop, the run exits non-zero, naming it.
start=$(date +%s)
timeout 60 "$twb" train "$model" --epochs 100000 --ranks 3 --comm-timeout 5 -q >"$tmp/k.out" 2>"$tmp/k.err" &
run=$!
victim=$(wait_rank 1)
[ -n "$victim" ] && kill -KILL "$victim"
wait $run
rc=$?
took=$(( $(date +%s) - start ))
check "a rank killed mid-run: exit non-zero within the time-out (${took} s), rank 1 named" \
  "[ -n '$victim' ] && [ $rc -ne 0 ] && [ $took -lt 30 ] && grep -q 'rank 1 (on .*) was killed by signal 9' '$tmp/k.err'" \
  "rc $rc: $(tail -c 400 "$tmp/k.err")"

# A rank that hangs (stopped): the others time out and name it.
start=$(date +%s)
timeout 60 "$twb" train "$model" --epochs 100000 --ranks 3 --comm-timeout 3 -q >"$tmp/h.out" 2>"$tmp/h.err" &
run=$!
victim=$(wait_rank 2)
[ -n "$victim" ] && kill -STOP "$victim"
wait $run
rc=$?
[ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null
took=$(( $(date +%s) - start ))
check "a rank that hangs: exit non-zero within the time-out (${took} s), rank 2 named" \
  "[ -n '$victim' ] && [ $rc -ne 0 ] && [ $took -lt 30 ] && grep -q 'rank 2 never arrived at collective #' '$tmp/h.err'" \
  "rc $rc: $(tail -c 600 "$tmp/h.err")"
check "a rank that hangs: the survivors print their last collectives" \
  "grep -q 'last collectives and messages' '$tmp/h.err'"

# twb profile --ranks: one trace, a process per rank, clocks recorded.
"$twb" profile "$model" --steps 4 --ranks 2 --bucket-mb 0.001 --trace "$tmp/p.json.gz" \
  >"$tmp/p.out" 2>"$tmp/p.err"
rc=$?
"$twb" trace-info "$tmp/p.json.gz" --json >"$tmp/pi.json" 2>"$tmp/pi.err"
check "twb profile --ranks 2: one merged trace whose trace-info has 2 ranks, each with steps and collectives, and a critical path through compute and communication" \
  "[ $rc -eq 0 ] && /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rs = d[\"files\"][0][\"rank_stats\"]
cp = d[\"files\"][0][\"critical_path\"]
parts = cp[\"compute_ns\"] + cp[\"comm_ns\"] + cp[\"wait_ns\"] + cp[\"idle_ns\"]
sys.exit(not (len(rs) == 2 and all(r[\"steps\"] == 4 and r[\"comm_ns\"] > 0 for r in rs)
              and cp[\"compute_ns\"] > 0 and cp[\"comm_ns\"] > 0 and 0 < parts <= cp[\"span_ns\"]))' '$tmp/pi.json'" \
  "rc $rc: $(head -c 300 "$tmp/p.err") $(head -c 300 "$tmp/pi.json")"

# --progress-json over 2 ranks: each metrics line has every rank's step
# time (2 entries, all > 0) and rank 0's gradient norms (every trainable
# parameter, finite); data parallel ends with one "buckets" line whose
# buckets hold every parameter once (two of them at 1 kB: a bucket takes
# parameters until it holds the size or more, as DDP's), a pipeline's
# norms are null for the stage rank 0 does not train.
"$twb" train "$model" --max-steps 3 --ranks 2 --bucket-mb 0.001 --progress-json \
  >"$tmp/pj.out" 2>"$tmp/pj.err"
rc=$?
"$twb" train "$model" --max-steps 2 --ranks 2 --parallel pipeline --progress-json \
  >"$tmp/pp.out" 2>"$tmp/pp.err"
rc2=$?
check "--progress-json --ranks 2: rank_step_ms (2 entries > 0), grad_norm of every parameter, one buckets line naming each parameter once" \
  "[ $rc -eq 0 ] && /usr/bin/python3 -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1]) if l.startswith(\"{\")]
ms = [l for l in ls if l[\"event\"] == \"metrics\"]
bk = [l for l in ls if l[\"event\"] == \"buckets\"]
names = [p for b in bk[0][\"buckets\"] for p in b[\"params\"]] if bk else []
ok = (len(ms) == 3 and all(len(m[\"rank_step_ms\"]) == 2 and min(m[\"rank_step_ms\"]) > 0 for m in ms)
      and all(len(m[\"grad_norm\"]) == 6 and all(v is not None and v > 0 for v in m[\"grad_norm\"].values()) for m in ms)
      and len(bk) == 1 and sorted(names) == sorted(ms[0][\"grad_norm\"]) and len(bk[0][\"buckets\"]) == 2
      and ls.index(bk[0]) < [l[\"event\"] for l in ls].index(\"finished\"))
sys.exit(not ok)' '$tmp/pj.out'" "rc $rc: $(head -c 600 "$tmp/pj.out") $(head -c 300 "$tmp/pj.err")"
check "--progress-json --parallel pipeline: rank_step_ms of both ranks, rank 0's stage's norms only" \
  "[ $rc2 -eq 0 ] && /usr/bin/python3 -c '
import json, sys
ms = [json.loads(l) for l in open(sys.argv[1]) if l.startswith(\"{\\\"event\\\":\\\"metrics\")]
g = ms[-1][\"grad_norm\"]
sys.exit(not (len(ms) == 2 and all(len(m[\"rank_step_ms\"]) == 2 and min(m[\"rank_step_ms\"]) > 0 for m in ms)
              and g[\"fc1.weight\"] > 0 and g[\"fc3.weight\"] is None))' '$tmp/pp.out'" \
  "rc $rc2: $(head -c 600 "$tmp/pp.out")"

echo "1..$n"
