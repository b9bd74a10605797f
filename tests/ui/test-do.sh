#!/usr/bin/env bash
# test-do.sh TWB — `twb --screenshot OUT.png --open MODEL --do "ACTION;…"` (TAP):
# actions run in order and the picture has the size asked for; a bad action
# name and a malformed one exit 2 naming the action; nothing is logged as a
# warning or critical.  Needs a display (the ui suite's xvfb-run gives one).
set -u
twb=$1
if [ -z "${DISPLAY:-}" ]; then
  echo "1..0 # SKIP no display"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_DATA_HOME="$tmp/data" XDG_STATE_HOME="$tmp/state" XDG_CONFIG_HOME="$tmp/config" \
  GSK_RENDERER=cairo GTK_A11Y=none GDK_BACKEND=x11 TWB_NO_RECOVERY=1 NO_AT_BRIDGE=1

# A small MLP on the synthetic spirals (2000 points, batches of 32).
cat >"$tmp/m.json" <<'EOF'
{ "format": "twb-model", "version": 1, "name": "small",
  "graph": { "nodes": [
    { "id": "x", "op": "input", "attrs": { "shape": [2], "dtype": "f32", "role": "data" }, "pos": [40, 40] },
    { "id": "y", "op": "input", "attrs": { "shape": [], "dtype": "i64", "role": "label" }, "pos": [40, 300] },
    { "id": "fc1", "op": "linear", "inputs": ["x"], "attrs": { "out_features": 16 }, "pos": [290, 40] },
    { "id": "relu1", "op": "relu", "inputs": ["fc1"], "pos": [540, 40] },
    { "id": "fc2", "op": "linear", "inputs": ["relu1"], "attrs": { "out_features": 16 }, "pos": [790, 40] },
    { "id": "relu2", "op": "relu", "inputs": ["fc2"], "pos": [290, 200] },
    { "id": "fc3", "op": "linear", "inputs": ["relu2"], "attrs": { "out_features": 2 }, "pos": [540, 200] },
    { "id": "loss", "op": "cross_entropy", "inputs": ["fc3", "y"], "pos": [790, 220] } ],
    "outputs": ["fc3"] },
  "training": { "loss": "loss", "batch_size": 32, "epochs": 1, "seed": 0, "dataset": "spirals",
    "validation_split": 0,
    "optimizer": { "type": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": false, "weight_decay": 0 },
    "schedule": { "type": "constant" } } }
EOF

n=0
fails=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; sed 's/^/# /' "$tmp/err" | head -20; }

# shot [twb args…]: run twb, keeping stdout, stderr (also in all.err) and
# the exit status (rc).
shot () {
  "$twb" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  cat "$tmp/err" >>"$tmp/all.err"
}

# PNG width and height from the IHDR chunk (bytes 16..23, big-endian).
png_size () {
  local b
  read -r -a b < <(od -An -tu1 -j16 -N8 "$1")
  [ "${#b[@]}" -eq 8 ] || { echo "none"; return; }
  echo "$(( (b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3] ))x$(( (b[4] << 24) | (b[5] << 16) | (b[6] << 8) | b[7] ))"
}

echo "1..11"

# 1-2: a breakpoint on fc2, then three steps: the run pauses at fc2's
# forward (the breakpoint comes first); exit 0, a 900x600 PNG.
shot --screenshot "$tmp/bp.png" --open "$tmp/m.json" --size 900x600 \
  --do "debugger.toggle-breakpoint('fc2');win.train-steps(3)"
if [ $rc -eq 0 ] && grep -q "bp.png: 900x600" "$tmp/out"; then ok "breakpoint and train-steps: exit 0"
else not_ok "breakpoint and train-steps: exit $rc, stdout $(cat "$tmp/out")"; fi
size=$(png_size "$tmp/bp.png" 2>/dev/null)
if [ "$size" = "900x600" ]; then ok "the PNG is 900x600"; else not_ok "the PNG is $size, not 900x600"; fi

# 3: in order, to their end, in the dark theme with the dashboard showing:
# 20 steps then the Training tab.
shot --screenshot "$tmp/dark.png" --open "$tmp/m.json" --theme dark \
  --do "win.train-steps(20);win.show-panel('training')"
size=$(png_size "$tmp/dark.png" 2>/dev/null)
if [ $rc -eq 0 ] && [ "$size" = "1280x800" ]; then ok "train-steps(20) in the dark theme: exit 0, 1280x800"
else not_ok "train-steps(20) in the dark theme: exit $rc, PNG $size"; fi

# 4: each action runs to its end before the next: three steps, then a stop
# from the pause, which the run's record (kept when a run ends) shows.
shot --screenshot "$tmp/stop.png" --open "$tmp/m.json" --do "win.train-steps(3);debugger.stop"
rec=$(find "$tmp/data" -name 'run-*.json' 2>/dev/null | head -1)
if [ $rc -eq 0 ] && [ -n "$rec" ] && grep -q '"state" : "stopped"' "$rec" && grep -q '"steps" : 3,' "$rec"
then ok "train-steps(3) then stop: the run is kept, stopped after 3 steps"
else not_ok "train-steps(3) then stop: exit $rc, record ${rec:-none}: $(tr -d '\n' <"${rec:-/dev/null}" | head -c 300)"; fi

# 5-6: an action that does not exist: exit 2, named, no picture.
shot --screenshot "$tmp/bad.png" --open "$tmp/m.json" --do "win.train-steps(2);win.no-such-action"
if [ $rc -eq 2 ] && grep -q "win.no-such-action" "$tmp/err"; then ok "an unknown action exits 2 naming it"
else not_ok "an unknown action: exit $rc"; fi
if [ ! -e "$tmp/bad.png" ]; then ok "no picture after a failed action"
else not_ok "a picture was written after a failed action"; fi

# 7: a malformed one: exit 2, named.
shot --screenshot "$tmp/mal.png" --open "$tmp/m.json" --do "win.train-steps("
if [ $rc -eq 2 ] && grep -q "win.train-steps(" "$tmp/err"; then ok "a malformed action exits 2 naming it"
else not_ok "a malformed action: exit $rc"; fi

# 8: --do without --screenshot: exit 2.
shot --open "$tmp/m.json" --do "debugger.run"
if [ $rc -eq 2 ] && grep -q -- "--do" "$tmp/err"; then ok "--do without --screenshot exits 2"
else not_ok "--do without --screenshot: exit $rc"; fi

# 9: the Profiler tab's Record around three steps, then the trace exported:
# it holds the three steps (read back by `twb trace-info --json`).
shot --screenshot "$tmp/prof.png" --open "$tmp/m.json" --panel profiler \
  --do "profiler.record;win.train-steps(3);profiler.record;profiler.export-to('$tmp/t.json.gz')"
steps=$("$twb" trace-info "$tmp/t.json.gz" --json 2>/dev/null | tr -d ' \n' | grep -o '"steps":{"count":[0-9]*' | grep -o '[0-9]*$')
if [ $rc -eq 0 ] && [ "${steps:-}" = "3" ]; then ok "Record around train-steps(3), exported: 3 steps"
else not_ok "Record and export: exit $rc, steps '${steps:-none}'"; fi

# 10: a trace given where a model goes opens in the Profiler tab (the same
# slices exported again).
shot --screenshot "$tmp/trace.png" --open "$tmp/t.json.gz" \
  --do "profiler.select-range('0,1');profiler.export-to('$tmp/t2.json')"
a=$("$twb" trace-info "$tmp/t.json.gz" --json 2>/dev/null | tr -d ' \n' | grep -o '"slices":[0-9]*' | head -1)
b=$("$twb" trace-info "$tmp/t2.json" --json 2>/dev/null | tr -d ' \n' | grep -o '"slices":[0-9]*' | head -1)
if [ $rc -eq 0 ] && [ -n "$a" ] && [ "$a" = "$b" ]; then ok "a trace opens in the window ($a both ways)"
else not_ok "opening a trace: exit $rc, '$a' then '$b'"; fi

# 11: nothing logged as a GLib warning or critical on the way.
if ! grep -E "(WARNING|CRITICAL) \*\*" "$tmp/all.err" >"$tmp/err"; then ok "no warning or critical logged"
else not_ok "warnings or criticals were logged"; fi

[ $fails -eq 0 ]
